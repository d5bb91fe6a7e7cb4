"""Where a PNG from kb.render is highlight-coloured: the check the render tests share (issue 15)."""

from __future__ import annotations

import io


def is_highlight(pixel: tuple[int, int, int]) -> bool:
    """kb.render's translucent yellow over a white page (and its orange outline), not black or grey text."""
    red, green, blue = pixel[:3]
    return red > 220 and green > 120 and blue < 200 and red - blue > 60


def highlight_pixels(png: bytes, pixel_boxes: list[list[int]], slack: int = 1) -> tuple[int, int, int]:
    """(highlight-coloured pixels inside the boxes, the boxes' area, highlight-coloured pixels outside them)."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    px = image.load()
    inside = area = outside = 0
    for y in range(image.height):
        for x in range(image.width):
            box = any(b[0] - slack <= x <= b[2] + slack and b[1] - slack <= y <= b[3] + slack for b in pixel_boxes)
            lit = is_highlight(px[x, y])
            if box:
                area += 1
                inside += lit
            else:
                outside += lit
    return inside, area, outside
