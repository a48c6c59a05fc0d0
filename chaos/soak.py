"""The totals of a soak (`kafkaref chaos soak`: seeded chaos runs in a row): runs, acknowledged
writes, faults injected, acknowledged writes lost, exit codes, and the soak's own exit code, the
worst of its runs (3 > 1 > 2 > 0: a crash first, then an anomaly)."""

from __future__ import annotations

import attrs


@attrs.define
class SoakTotals:
    runs: int = 0
    acknowledged: int = 0
    lost: int = 0
    faults: dict = attrs.Factory(dict)
    exit_codes: dict = attrs.Factory(dict)
    anomalous_runs: list = attrs.Factory(list)

    def add(self, result) -> None:
        self.runs += 1
        summary = result.summary
        self.acknowledged += summary.get("acknowledged", 0)
        self.lost += lost_writes(result.report)
        for kind, count in summary.get("faults", {}).items():
            self.faults[kind] = self.faults.get(kind, 0) + count
        code = str(result.exit_code)
        self.exit_codes[code] = self.exit_codes.get(code, 0) + 1
        if result.exit_code:
            self.anomalous_runs.append(str(result.run_dir))

    def note(self) -> str:
        faults = ", ".join(f"{k} {v}" for k, v in sorted(self.faults.items())) or "none"
        return (f"soak: {self.runs} runs, {self.acknowledged:,} acknowledged writes, faults "
                f"injected: {faults}; acknowledged writes lost: {self.lost}; exit codes "
                f"{self.exit_codes}" + (f"; runs to look at: {self.anomalous_runs}"
                                        if self.anomalous_runs else ""))

    def exit_code(self) -> int:
        for code in ("4", "3", "1", "2"):
            if self.exit_codes.get(code):
                return int(code)
        return 0


def lost_writes(report: dict) -> int:
    anomalies = report.get("anomalies") or {}
    return (anomalies.get("lost_write") or {}).get("count", 0)

