#!/usr/bin/env python3
"""Writes the seed inputs of `hereabouts-fuzz images` into Tests/Fuzzing/ImageCorpus.

Real images (the tests' own, from Shared/ServiceKitTesting/TestImages.swift) and
hostile headers: dimensions whose product overflows, chunk and segment lengths past
the end or at their maximum, truncated headers, EXIF whose offsets and counts point
anywhere. `make fuzz` adds what reaches new code; `make test` replays them all.
Run again after changing it: python3 Tests/Fuzzing/image_seeds.py
"""
import base64
import pathlib
import re
import struct
import zlib

HERE = pathlib.Path(__file__).resolve().parent
OUT = HERE / "ImageCorpus"
TEST_IMAGES = HERE.parent.parent / "Shared/ServiceKitTesting/TestImages.swift"

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_chunk(kind: bytes, data: bytes, length: int | None = None) -> bytes:
    size = len(data) if length is None else length
    return struct.pack(">I", size) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def ihdr(width: int, height: int) -> bytes:
    return png_chunk(b"IHDR", struct.pack(">II", width, height) + bytes([8, 2, 0, 0, 0]))


def tiff(ifd_offset: int, entries: int, entry_bytes: bytes = b"", big_endian: bool = True) -> bytes:
    order = ">" if big_endian else "<"
    head = (b"MM" if big_endian else b"II") + struct.pack(order + "HI", 42, ifd_offset)
    return head + struct.pack(order + "H", entries) + entry_bytes


def orientation_entry(value: int, kind: int = 3, count: int = 1) -> bytes:
    return struct.pack(">HHIH", 0x0112, kind, count, value) + b"\0\0"


def jpeg_segment(marker: int, payload: bytes, length: int | None = None) -> bytes:
    size = len(payload) + 2 if length is None else length
    return bytes([0xFF, marker]) + struct.pack(">H", size) + payload


def sof(width: int, height: int) -> bytes:
    return jpeg_segment(0xC0, bytes([8]) + struct.pack(">HH", height, width) + bytes([1, 1, 0x11, 0]))


def riff(body: bytes, size: int | None = None) -> bytes:
    return b"RIFF" + struct.pack("<I", len(body) if size is None else size) + body


def webp_chunk(kind: bytes, data: bytes, size: int | None = None) -> bytes:
    declared = len(data) if size is None else size
    return kind + struct.pack("<I", declared) + data + (b"\0" if size is None and len(data) % 2 else b"")


def vp8x(flags: int, width: int, height: int) -> bytes:
    return webp_chunk(b"VP8X", bytes([flags, 0, 0, 0]) + (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little"))


def seeds() -> dict[str, bytes]:
    real = dict(re.findall(r'public static let (\w+) = Data\(base64Encoded: "([^"]+)"\)', TEST_IMAGES.read_text()))
    out = {f"real-{name}": base64.b64decode(value) for name, value in real.items()}
    jpeg = out["real-jpeg"]
    exif_orientation = b"Exif\0\0" + tiff(8, 1, orientation_entry(6)) + b"\0\0\0\0"

    out.update({
        # PNG
        "png-overflowing-dimensions": PNG_SIGNATURE + ihdr(0xFFFFFFFF, 0xFFFFFFFF),
        "png-bomb": PNG_SIGNATURE + ihdr(50_000, 50_000) + png_chunk(b"IEND", b""),
        "png-zero-width": PNG_SIGNATURE + ihdr(0, 7) + png_chunk(b"IEND", b""),
        "png-truncated-ihdr": PNG_SIGNATURE + struct.pack(">I", 13) + b"IHDR\0\0",
        "png-chunk-length-max": PNG_SIGNATURE + ihdr(1, 1) + png_chunk(b"tEXt", b"k\0v", length=0xFFFFFFFF),
        "png-chunk-length-past-end": PNG_SIGNATURE + ihdr(1, 1) + png_chunk(b"eXIf", tiff(8, 1), length=4096),
        "png-exif-ifd-far": PNG_SIGNATURE + ihdr(1, 1) + png_chunk(b"eXIf", tiff(0xFFFFFFF0, 1)) + png_chunk(b"IEND", b""),
        "png-exif-many-entries": PNG_SIGNATURE + ihdr(1, 1) + png_chunk(b"eXIf", tiff(8, 0xFFFF, orientation_entry(3)))
        + png_chunk(b"IEND", b""),
        "png-exif-orientation": PNG_SIGNATURE + ihdr(2, 2) + png_chunk(b"eXIf", tiff(8, 1, orientation_entry(8)) + b"\0\0\0\0")
        + png_chunk(b"tEXt", b"where\0home") + png_chunk(b"IEND", b"") + b"trailing",
        "png-exif-little-endian": PNG_SIGNATURE + ihdr(2, 2)
        + png_chunk(b"eXIf", tiff(8, 1, struct.pack("<HHIH", 0x0112, 3, 1, 5) + b"\0\0", big_endian=False))
        + png_chunk(b"IEND", b""),
        "png-two-exif": PNG_SIGNATURE + ihdr(2, 2) + png_chunk(b"eXIf", tiff(8, 1, orientation_entry(0xFFFF)))
        + png_chunk(b"eXIf", tiff(8, 1, orientation_entry(2))) + png_chunk(b"IEND", b""),
        # JPEG
        "jpeg-max-dimensions": b"\xFF\xD8" + sof(0xFFFF, 0xFFFF) + b"\xFF\xD9",
        "jpeg-sof-truncated": b"\xFF\xD8\xFF\xC0\x00\x11\x08\xFF",
        "jpeg-sof-length-short": b"\xFF\xD8" + jpeg_segment(0xC0, bytes([8, 0, 1, 0, 1]), length=2) + b"\xFF\xD9",
        "jpeg-sof-past-end": b"\xFF\xD8" + jpeg_segment(0xC0, bytes([8, 0, 2, 0, 3, 1, 1, 0x11]), length=0xFFFF),
        "jpeg-segment-length-max": b"\xFF\xD8" + jpeg_segment(0xE1, b"Exif\0\0MM\0*", length=0xFFFF) + sof(3, 2),
        "jpeg-segment-length-zero": b"\xFF\xD8" + jpeg_segment(0xE0, b"", length=0) + sof(3, 2),
        "jpeg-fill-bytes": b"\xFF\xD8" + b"\xFF" * 64 + sof(3, 2) + b"\xFF\xD9",
        "jpeg-restart-markers": b"\xFF\xD8\xFF\xD0\xFF\x01" + sof(3, 2) + b"\xFF\xD9",
        "jpeg-eoi-first": b"\xFF\xD8\xFF\xD9" + sof(3, 2),
        "jpeg-scan-without-end": jpeg[: len(jpeg) - 2] + b"\xFF\x00\xFF\xD3\x00\x00",
        "jpeg-exif-orientation-then-comment": b"\xFF\xD8" + jpeg_segment(0xE1, exif_orientation)
        + jpeg_segment(0xFE, b"taken at home") + jpeg[2:] + b"\xFF\xD8trailing image",
        "jpeg-exif-ifd-loop": b"\xFF\xD8" + jpeg_segment(0xE1, b"Exif\0\0" + tiff(8, 0xFFFF, orientation_entry(6) * 3))
        + sof(3, 2) + b"\xFF\xD9",
        "jpeg-exif-ifd-far": b"\xFF\xD8" + jpeg_segment(0xE1, b"Exif\0\0" + tiff(0x7FFFFFFF, 1)) + sof(3, 2) + b"\xFF\xD9",
        "jpeg-exif-wrong-type": b"\xFF\xD8" + jpeg_segment(0xE1, b"Exif\0\0" + tiff(8, 1, orientation_entry(6, kind=4, count=0xFFFFFFFF)))
        + sof(3, 2) + b"\xFF\xD9",
        "jpeg-icc-and-mpf": b"\xFF\xD8" + jpeg_segment(0xE2, b"ICC_PROFILE\0\x01\x01") + jpeg_segment(0xE2, b"MPF\0II*\0")
        + jpeg[2:],
        # WebP
        "webp-riff-size-max": riff(b"WEBP" + vp8x(0, 3, 2), size=0xFFFFFFFF),
        "webp-chunk-size-max": riff(b"WEBP" + webp_chunk(b"VP8X", bytes(10), size=0xFFFFFFFF)),
        "webp-vp8x-max-canvas": riff(b"WEBP" + vp8x(0, 1 << 24, 1 << 24)),
        "webp-vp8l-max": riff(b"WEBP" + webp_chunk(b"VP8L", b"\x2F\xFF\xFF\xFF\xFF\x00")),
        "webp-vp8-max": riff(b"WEBP" + webp_chunk(b"VP8 ", b"\0" * 3 + b"\x9D\x01\x2A\xFF\xFF\xFF\xFF" + b"\0" * 4)),
        "webp-truncated": b"RIFF\0\0\0\0WEBPVP8 ",
        "webp-exif-odd-unpadded": riff(b"WEBP" + vp8x(0x08, 3, 2) + b"EXIF" + struct.pack("<I", 35)
                                       + tiff(8, 1, orientation_entry(6)) + b"\0\0\0\0\0"),
        "webp-exif-past-end": riff(b"WEBP" + vp8x(0x08, 3, 2) + webp_chunk(b"EXIF", tiff(8, 1, orientation_entry(6)), size=0x7FFFFFFF)),
        "webp-xmp-and-exif": riff(b"WEBP" + vp8x(0x0C, 3, 2) + webp_chunk(b"VP8L", b"\x2F\x02\x40\x00\x00")
                                  + webp_chunk(b"EXIF", tiff(8, 1, orientation_entry(7)) + b"\0\0\0\0")
                                  + webp_chunk(b"XMP ", b"<x:xmpmeta>home</x:xmpmeta>")),
        "webp-simple-with-exif": riff(b"WEBP" + webp_chunk(b"VP8L", b"\x2F\x02\x40\x00\x00")
                                      + webp_chunk(b"EXIF", tiff(8, 1, orientation_entry(6)))),
    })
    return out


def main() -> None:
    OUT.mkdir(exist_ok=True)
    for name, data in seeds().items():
        (OUT / f"seed-{name}").write_bytes(data)


if __name__ == "__main__":
    main()
