// File helpers as asc-devkit's examples carry them (ReadFile / WriteFile of raw .bin data).
#pragma once
#include <cstdio>
#include <cstdint>
#include <string>

inline bool ReadFile(const std::string& path, size_t size, void* buf, size_t bufSize)
{
    FILE* f = std::fopen(path.c_str(), "rb");
    if (f == nullptr || size > bufSize) {
        std::printf("cannot read %s\n", path.c_str());
        return false;
    }
    const size_t got = std::fread(buf, 1, size, f);
    std::fclose(f);
    return got == size;
}

inline bool WriteFile(const std::string& path, const void* buf, size_t size)
{
    FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr) return false;
    const size_t put = std::fwrite(buf, 1, size, f);
    std::fclose(f);
    return put == size;
}
