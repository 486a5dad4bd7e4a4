// memcpy and memset are in the built-in runtime header.
#pragma once
