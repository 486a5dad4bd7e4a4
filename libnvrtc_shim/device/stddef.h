// size_t and ptrdiff_t come from the device runtime header.
#pragma once
#define offsetof(type, member) __builtin_offsetof(type, member)
