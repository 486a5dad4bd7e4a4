// printf, assert and the CUDA device runtime are in the built-in runtime header,
// included before every program; this name exists so that includes of it resolve.
#pragma once
