"""FNV-1a 64, the checksum of this project's checkpoint and training-state files (llmc/fileio.h),
for the tests that write such files themselves."""


def fnv1a64(data, h=0xCBF29CE484222325):
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h
