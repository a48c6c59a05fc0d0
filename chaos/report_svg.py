"""Inline SVG plots for report.html, drawn the way Jepsen's checker draws them: time on x, fault
windows shaded behind, ok / info / fail in fixed colours. No JavaScript, no external files: the
page renders from file:// in any browser, offline."""

from __future__ import annotations

import math
from html import escape

# Jepsen's outcome colours (ok blue, info orange, fail red), a little darker for print.
OUTCOME_COLOURS = {"ok": "#2b7bd3", "info": "#f39c12", "fail": "#d62d4b"}
FAULT_COLOURS = ["#f4b6b6", "#b6d7f4", "#c9f4b6", "#f4e3b6", "#dcb6f4", "#b6f4ec", "#e0e0e0"]
SERIES_COLOURS = ["#2b7bd3", "#d62d4b", "#f39c12", "#2ca02c", "#8c564b", "#9467bd", "#7f7f7f"]
WIDTH, HEIGHT = 900, 260
LEFT, RIGHT, TOP, BOTTOM = 70, 160, 14, 34


def fault_colour(faults_f: list[str]):
    kinds = sorted(set(faults_f))
    return {f: FAULT_COLOURS[i % len(FAULT_COLOURS)] for i, f in enumerate(kinds)}


def duration(ns: float) -> str:
    """A duration in the unit that reads best (histories use ns; synthetic ones tiny spans)."""
    for unit, size in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if abs(ns) >= size:
            return f"{ns / size:.3g} {unit}"
    return f"{ns:.3g} ns"


def _nice_ticks(t0: float, t1: float, count: int = 6) -> list[float]:
    """Ticks at t0 plus round multiples (1, 2 or 5 times a power of ten) of the span."""
    span = max(t1 - t0, 1e-9)
    raw = span / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return [t0 + step * i for i in range(int(span // step) + 1)]


class Plot:
    """One SVG chart: x is history time, y linear or log."""

    def __init__(self, title: str, t0: int, t1: int, y0: float, y1: float, *, log_y=False,
                 y_label: str = "", y_format=duration):
        self.title, self.log_y, self.y_label, self.y_format = title, log_y, y_label, y_format
        self.t0, self.t1 = t0, max(t1, t0 + 1)
        if log_y:
            y0 = max(y0, 1e-9)
            y1 = max(y1, y0 * 10)
            self.y0, self.y1 = 10 ** math.floor(math.log10(y0)), 10 ** math.ceil(math.log10(y1))
        else:
            self.y0, self.y1 = y0, (y1 if y1 > y0 else y0 + 1)
        self.back: list[str] = []  # fault windows, under the grid and the data
        self.parts: list[str] = []
        self.legend: list[tuple[str, str, str]] = []  # (shape, colour, label)

    def x(self, t: float) -> float:
        return LEFT + (t - self.t0) / (self.t1 - self.t0) * (WIDTH - LEFT - RIGHT)

    def y(self, v: float) -> float:
        span = HEIGHT - TOP - BOTTOM
        if self.log_y:
            v = min(max(v, self.y0), self.y1)
            f = (math.log10(v) - math.log10(self.y0)) / (math.log10(self.y1) - math.log10(self.y0))
        else:
            f = (v - self.y0) / (self.y1 - self.y0)
        return TOP + span * (1 - f)

    def faults(self, faults, colours) -> None:
        for fault in faults:
            end = self.t1 if fault.end is None else fault.end
            x0, x1 = self.x(fault.start), self.x(end)
            label = f"{fault.f} {fault.detail}".strip() + (" (never healed)" if fault.end is None
                                                          else "")
            self.back.append(
                f'<rect class="fault" x="{x0:.1f}" y="{TOP}" width="{max(x1 - x0, 1.5):.1f}" '
                f'height="{HEIGHT - TOP - BOTTOM}" fill="{colours[fault.f]}" opacity="0.55">'
                f"<title>{escape(label)}: {duration(fault.start - self.t0)} to "
                f"{duration(end - self.t0)}</title></rect>")
        for f, colour in colours.items():
            self.legend.append(("rect", colour, f"fault: {f}"))

    def points(self, points, colour: str, label: str, shape: str = "circle") -> None:
        out = []
        for t, v in points:
            cx, cy = self.x(t), self.y(v)
            if shape == "circle":
                out.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="1.8"/>')
            else:  # a small triangle: info and fail stand out from the ok cloud
                out.append(f'<path d="M{cx:.1f} {cy - 2.6:.1f}l2.4 4.4h-4.8z"/>')
        self.parts.append(f'<g class="series" fill="{colour}" fill-opacity="0.75">'
                          + "".join(out) + "</g>")
        self.legend.append((shape, colour, label))

    def line(self, points, colour: str, label: str) -> None:
        segments, current = [], []
        for t, v in points:
            if v is None:
                if current:
                    segments.append(current)
                current = []
                continue
            current.append(f"{self.x(t):.1f} {self.y(v):.1f}")
        if current:
            segments.append(current)
        d = " ".join("M" + " L".join(segment) for segment in segments)
        if d:
            self.parts.append(f'<path class="line" d="{d}" fill="none" stroke="{colour}" '
                              f'stroke-width="1.6"/>')
        self.legend.append(("line", colour, label))

    def _axes(self) -> str:
        out = [f'<line x1="{LEFT}" y1="{HEIGHT - BOTTOM}" x2="{WIDTH - RIGHT}" '
               f'y2="{HEIGHT - BOTTOM}" stroke="#444"/>',
               f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{HEIGHT - BOTTOM}" stroke="#444"/>']
        for t in _nice_ticks(self.t0, self.t1):
            x = self.x(t)
            out.append(f'<line x1="{x:.1f}" y1="{HEIGHT - BOTTOM}" x2="{x:.1f}" '
                       f'y2="{HEIGHT - BOTTOM + 4}" stroke="#444"/>'
                       f'<text x="{x:.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle">'
                       f"{escape(duration(t - self.t0))}</text>")
        for v in self._y_ticks():
            y = self.y(v)
            out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" '
                       f'stroke="#ddd"/><text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">'
                       f"{escape(self.y_format(v))}</text>")
        out.append(f'<text x="{(LEFT + WIDTH - RIGHT) / 2}" y="{HEIGHT - 3}" '
                   f'text-anchor="middle" class="axis">time since the run started</text>')
        out.append(f'<text transform="translate(12 {(TOP + HEIGHT - BOTTOM) / 2}) rotate(-90)" '
                   f'text-anchor="middle" class="axis">{escape(self.y_label)}</text>')
        return "".join(out)

    def _y_ticks(self) -> list[float]:
        if self.log_y:
            lo, hi = round(math.log10(self.y0)), round(math.log10(self.y1))
            step = max(1, math.ceil((hi - lo) / 6))
            return [10.0 ** e for e in range(lo, hi + 1, step)]
        return [self.y0 + v for v in _nice_ticks(0, self.y1 - self.y0, count=4)]

    def _legend(self) -> str:
        out, x = [], WIDTH - RIGHT + 12
        for n, (shape, colour, label) in enumerate(self.legend[:14]):
            y = TOP + 6 + n * 16
            if shape == "rect":
                mark = f'<rect x="{x}" y="{y - 6}" width="12" height="10" fill="{colour}"/>'
            elif shape == "line":
                mark = (f'<line x1="{x}" y1="{y}" x2="{x + 12}" y2="{y}" stroke="{colour}" '
                        f'stroke-width="2"/>')
            elif shape == "circle":
                mark = f'<circle cx="{x + 6}" cy="{y}" r="3.5" fill="{colour}"/>'
            else:
                mark = f'<path d="M{x + 6} {y - 4}l4 7h-8z" fill="{colour}"/>'
            out.append(mark + f'<text x="{x + 18}" y="{y + 4}">{escape(label)}</text>')
        return "".join(out)

    def svg(self) -> str:
        return (f'<figure><figcaption>{escape(self.title)}</figcaption>'
                f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
                f'width="{WIDTH}" height="{HEIGHT}" role="img" aria-label="{escape(self.title)}">'
                f'<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="white"/>'
                + "".join(self.back) + self._axes() + "".join(self.parts) + self._legend()
                + "</svg></figure>")
