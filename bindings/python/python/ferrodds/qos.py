"""QoS policies (the ones the Rust API has): reliability, durability, history, resource
limits, deadline, ownership and partition. Unset fields keep the DDS defaults (writers
RELIABLE, readers BEST_EFFORT, both VOLATILE with KEEP_LAST 1)."""

from __future__ import annotations

import dataclasses
import enum
from typing import Any, Dict, Optional, Tuple, Union

__all__ = [
    "Reliability",
    "Durability",
    "Ownership",
    "KeepLast",
    "KeepAll",
    "ResourceLimits",
    "Qos",
]


class Reliability(str, enum.Enum):
    """RELIABILITY kind."""

    BEST_EFFORT = "best_effort"
    RELIABLE = "reliable"


class Durability(str, enum.Enum):
    """DURABILITY kind."""

    VOLATILE = "volatile"
    TRANSIENT_LOCAL = "transient_local"


class Ownership(str, enum.Enum):
    """OWNERSHIP kind."""

    SHARED = "shared"
    EXCLUSIVE = "exclusive"


@dataclasses.dataclass(frozen=True)
class KeepLast:
    """HISTORY KEEP_LAST with ``depth`` samples per instance."""

    depth: int = 1


@dataclasses.dataclass(frozen=True)
class KeepAll:
    """HISTORY KEEP_ALL (bounded by the resource limits)."""


@dataclasses.dataclass(frozen=True)
class ResourceLimits:
    """RESOURCE_LIMITS; ``None`` = unlimited."""

    max_samples: Optional[int] = None
    max_instances: Optional[int] = None
    max_samples_per_instance: Optional[int] = None


def _check(name: str, value: Any, kind: Any) -> None:
    if value is not None and not isinstance(value, kind):
        raise TypeError(f"Qos.{name} must be {kind}, got {type(value).__name__}")


@dataclasses.dataclass(frozen=True)
class Qos:
    """QoS of a writer or reader; ``None`` keeps the default."""

    reliability: Optional[Reliability] = None
    #: Seconds a KEEP_ALL writer blocks on a full history before `DdsTimeoutError`.
    max_blocking_time: float = 0.1
    durability: Optional[Durability] = None
    history: Union[KeepLast, KeepAll, None] = None
    resource_limits: Optional[ResourceLimits] = None
    #: DEADLINE period in seconds.
    deadline: Optional[float] = None
    ownership: Optional[Ownership] = None
    #: PARTITION names (of the writer's publisher / the reader's subscriber).
    partition: Tuple[str, ...] = ()

    def _spec(self) -> Dict[str, Any]:
        """The plain values the native module reads (validated here)."""
        _check("reliability", self.reliability, Reliability)
        _check("durability", self.durability, Durability)
        _check("history", self.history, (KeepLast, KeepAll))
        _check("resource_limits", self.resource_limits, ResourceLimits)
        _check("ownership", self.ownership, Ownership)
        _check("max_blocking_time", self.max_blocking_time, (int, float))
        _check("deadline", self.deadline, (int, float))
        if isinstance(self.partition, str) or not all(isinstance(p, str) for p in self.partition):
            raise TypeError("Qos.partition must be a tuple of str")
        history: Optional[int] = None
        if isinstance(self.history, KeepLast):
            if not isinstance(self.history.depth, int) or self.history.depth < 1:
                raise ValueError(f"KeepLast depth must be >= 1, got {self.history.depth!r}")
            history = self.history.depth
        elif isinstance(self.history, KeepAll):
            history = 0
        limits = None
        if self.resource_limits is not None:
            r = self.resource_limits
            limits = (r.max_samples, r.max_instances, r.max_samples_per_instance)
        return {
            "reliability": self.reliability.value if self.reliability else None,
            "max_blocking_time": float(self.max_blocking_time),
            "durability": self.durability.value if self.durability else None,
            "history": history,
            "resource_limits": limits,
            "deadline": None if self.deadline is None else float(self.deadline),
            "ownership": self.ownership.value if self.ownership else None,
            "partition": list(self.partition),
        }
