"""What ingest repaired, dropped or could not interpret: counted, with one example each.

Problems in the input are recorded as data (Perfetto's ``stats`` idea), not raised, so the rest of
the trace can still be analysed, and every report shows them.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Diagnostic:
    """One kind of repair or loss, aggregated over the input."""

    name: str  # stable kebab-case id, e.g. "truncated-file"
    severity: str  # "error" (data lost), "warning" (data repaired), "info"
    count: int
    example: str
    source: str = ""  # the file it came from

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "severity": self.severity, "count": self.count,
                "example": self.example, "source": self.source}


@dataclass
class DiagnosticsBuilder:
    """Accumulates diagnostics during ingest; frozen into a tuple at the end."""

    source: str = ""
    _items: dict[tuple[str, str], list[object]] = field(default_factory=dict)

    def add(self, name: str, severity: str, example: str, count: int = 1, source: str | None = None) -> None:
        if count <= 0:
            return
        key = (name, source if source is not None else self.source)
        item = self._items.get(key)
        if item is None:
            self._items[key] = [severity, count, example[:300]]
        else:
            item[1] = int(item[1]) + count  # type: ignore[call-overload]

    def extend(self, diags: tuple[Diagnostic, ...] | list[Diagnostic]) -> None:
        for d in diags:
            self.add(d.name, d.severity, d.example, d.count, d.source)

    def freeze(self) -> tuple[Diagnostic, ...]:
        out = [Diagnostic(name, str(v[0]), int(v[1]), str(v[2]), src)  # type: ignore[call-overload]
               for (name, src), v in self._items.items()]
        order = {"error": 0, "warning": 1, "info": 2}
        return tuple(sorted(out, key=lambda d: (order.get(d.severity, 3), d.name, d.source)))
