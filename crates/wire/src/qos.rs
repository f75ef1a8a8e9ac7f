//! QoS policy values of SEDP/SPDP parameter lists (DDSI-RTPS 2.5 §9.6.3,
//! DDS 1.4 §2.2.3), each a [`ParameterValue`] in both byte orders.
//!
//! Enumerations use the RTPS wire values (e.g. reliability BEST_EFFORT = 1,
//! RELIABLE = 2); an unknown value decodes to [`WireError::InvalidEnum`].
//! Sequence-valued policies ([`Partition`], [`DataRepresentation`]) are
//! borrowed views: iterating them never allocates.

use crate::codec::{pad4, Endianness, Reader, Writer};
use crate::error::{Result, WireError};
use crate::parameter::ParameterValue;
use crate::types::{Duration, WireType};
use crate::values::{decode_with, encode_with, read_string, string_len, write_string};

macro_rules! wire_enum {
    ($(#[$m:meta])* $name:ident: $what:literal { $($(#[$vm:meta])* $v:ident = $n:expr),* $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vm])* $v),*
        }

        impl $name {
            /// The wire value.
            #[must_use]
            pub const fn to_u32(self) -> u32 {
                match self {
                    $($name::$v => $n),*
                }
            }

            /// From the wire value.
            pub const fn from_u32(v: u32) -> Result<Self> {
                match v {
                    $($n => Ok($name::$v),)*
                    value => Err(WireError::InvalidEnum { what: $what, value }),
                }
            }

            fn read(r: &mut Reader<'_>) -> Result<Self> {
                Self::from_u32(r.u32()?)
            }
        }
    };
}

wire_enum!(
    /// Reliability kind.
    ReliabilityKind: "reliability kind" {
        /// BEST_EFFORT (1).
        BestEffort = 1,
        /// RELIABLE (2).
        Reliable = 2,
    }
);
wire_enum!(
    /// Durability kind.
    DurabilityKind: "durability kind" {
        /// VOLATILE (0).
        Volatile = 0,
        /// TRANSIENT_LOCAL (1).
        TransientLocal = 1,
        /// TRANSIENT (2).
        Transient = 2,
        /// PERSISTENT (3).
        Persistent = 3,
    }
);
wire_enum!(
    /// History kind.
    HistoryKind: "history kind" {
        /// KEEP_LAST (0).
        KeepLast = 0,
        /// KEEP_ALL (1).
        KeepAll = 1,
    }
);
wire_enum!(
    /// Liveliness kind.
    LivelinessKind: "liveliness kind" {
        /// AUTOMATIC (0).
        Automatic = 0,
        /// MANUAL_BY_PARTICIPANT (1).
        ManualByParticipant = 1,
        /// MANUAL_BY_TOPIC (2).
        ManualByTopic = 2,
    }
);
wire_enum!(
    /// Ownership kind.
    OwnershipKind: "ownership kind" {
        /// SHARED (0).
        Shared = 0,
        /// EXCLUSIVE (1).
        Exclusive = 1,
    }
);
wire_enum!(
    /// Destination order kind.
    DestinationOrderKind: "destination order kind" {
        /// BY_RECEPTION_TIMESTAMP (0).
        ByReceptionTimestamp = 0,
        /// BY_SOURCE_TIMESTAMP (1).
        BySourceTimestamp = 1,
    }
);
wire_enum!(
    /// Presentation access scope.
    PresentationAccessScope: "presentation access scope" {
        /// INSTANCE (0).
        Instance = 0,
        /// TOPIC (1).
        Topic = 1,
        /// GROUP (2).
        Group = 2,
    }
);

/// Implements `ParameterValue` for a struct of fixed-size fields.
macro_rules! fixed_value {
    ($ty:ident, $len:expr, |$r:ident| $dec:expr, |$s:ident, $w:ident| $enc:expr) => {
        impl<'a> ParameterValue<'a> for $ty {
            fn decode(value: &'a [u8], endian: Endianness) -> Result<Self> {
                decode_with(value, endian, |$r: &mut Reader<'a>| $dec)
            }
            fn encoded_len(&self) -> usize {
                $len
            }
            fn encode(&self, endian: Endianness, out: &mut [u8]) -> Result<usize> {
                let $s = self;
                encode_with(out, endian, $len, |$w: &mut Writer<'_>| $enc)
            }
        }
    };
}

/// `PID_RELIABILITY`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Reliability {
    /// Kind.
    pub kind: ReliabilityKind,
    /// Maximum time a write may block.
    pub max_blocking_time: Duration,
}

fixed_value!(
    Reliability,
    12,
    |r| Ok(Reliability {
        kind: ReliabilityKind::read(r)?,
        max_blocking_time: Duration::read(r)?,
    }),
    |s, w| {
        w.u32(s.kind.to_u32())?;
        s.max_blocking_time.write(w)
    }
);

/// `PID_DURABILITY`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Durability {
    /// Kind.
    pub kind: DurabilityKind,
}

fixed_value!(
    Durability,
    4,
    |r| Ok(Durability {
        kind: DurabilityKind::read(r)?
    }),
    |s, w| w.u32(s.kind.to_u32())
);

/// `PID_HISTORY`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct History {
    /// Kind.
    pub kind: HistoryKind,
    /// Depth (meaningful for KEEP_LAST).
    pub depth: i32,
}

fixed_value!(
    History,
    8,
    |r| Ok(History {
        kind: HistoryKind::read(r)?,
        depth: r.i32()?,
    }),
    |s, w| {
        w.u32(s.kind.to_u32())?;
        w.i32(s.depth)
    }
);

/// `PID_RESOURCE_LIMITS` (-1 = unlimited).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ResourceLimits {
    /// Maximum samples.
    pub max_samples: i32,
    /// Maximum instances.
    pub max_instances: i32,
    /// Maximum samples per instance.
    pub max_samples_per_instance: i32,
}

fixed_value!(
    ResourceLimits,
    12,
    |r| Ok(ResourceLimits {
        max_samples: r.i32()?,
        max_instances: r.i32()?,
        max_samples_per_instance: r.i32()?,
    }),
    |s, w| {
        w.i32(s.max_samples)?;
        w.i32(s.max_instances)?;
        w.i32(s.max_samples_per_instance)
    }
);

/// `PID_LIVELINESS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Liveliness {
    /// Kind.
    pub kind: LivelinessKind,
    /// Lease duration.
    pub lease_duration: Duration,
}

fixed_value!(
    Liveliness,
    12,
    |r| Ok(Liveliness {
        kind: LivelinessKind::read(r)?,
        lease_duration: Duration::read(r)?,
    }),
    |s, w| {
        w.u32(s.kind.to_u32())?;
        s.lease_duration.write(w)
    }
);

macro_rules! duration_policy {
    ($(#[$m:meta])* $ty:ident . $field:ident) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub struct $ty {
            /// The duration.
            pub $field: Duration,
        }

        fixed_value!(
            $ty,
            8,
            |r| Ok($ty {
                $field: Duration::read(r)?
            }),
            |s, w| s.$field.write(w)
        );
    };
}

duration_policy!(
    /// `PID_DEADLINE`.
    Deadline.period
);
duration_policy!(
    /// `PID_LATENCY_BUDGET`.
    LatencyBudget.duration
);
duration_policy!(
    /// `PID_LIFESPAN`.
    Lifespan.duration
);
duration_policy!(
    /// `PID_TIME_BASED_FILTER`.
    TimeBasedFilter.minimum_separation
);

/// `PID_OWNERSHIP`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ownership {
    /// Kind.
    pub kind: OwnershipKind,
}

fixed_value!(
    Ownership,
    4,
    |r| Ok(Ownership {
        kind: OwnershipKind::read(r)?
    }),
    |s, w| w.u32(s.kind.to_u32())
);

/// `PID_OWNERSHIP_STRENGTH`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OwnershipStrength {
    /// Strength.
    pub value: i32,
}

fixed_value!(
    OwnershipStrength,
    4,
    |r| Ok(OwnershipStrength { value: r.i32()? }),
    |s, w| w.i32(s.value)
);

/// `PID_TRANSPORT_PRIORITY`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TransportPriority {
    /// Priority.
    pub value: i32,
}

fixed_value!(
    TransportPriority,
    4,
    |r| Ok(TransportPriority { value: r.i32()? }),
    |s, w| w.i32(s.value)
);

/// `PID_DESTINATION_ORDER`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DestinationOrder {
    /// Kind.
    pub kind: DestinationOrderKind,
}

fixed_value!(
    DestinationOrder,
    4,
    |r| Ok(DestinationOrder {
        kind: DestinationOrderKind::read(r)?
    }),
    |s, w| w.u32(s.kind.to_u32())
);

/// `PID_PRESENTATION`: access scope (u32) then two boolean octets (padded to 8 by the list).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Presentation {
    /// Access scope.
    pub access_scope: PresentationAccessScope,
    /// Coherent access.
    pub coherent_access: bool,
    /// Ordered access.
    pub ordered_access: bool,
}

fixed_value!(
    Presentation,
    6,
    |r| Ok(Presentation {
        access_scope: PresentationAccessScope::read(r)?,
        coherent_access: r.u8()? != 0,
        ordered_access: r.u8()? != 0,
    }),
    |s, w| {
        w.u32(s.access_scope.to_u32())?;
        w.u8(u8::from(s.coherent_access))?;
        w.u8(u8::from(s.ordered_access))
    }
);

/// `PID_DURABILITY_SERVICE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DurabilityService {
    /// Service cleanup delay.
    pub service_cleanup_delay: Duration,
    /// History kind.
    pub history_kind: HistoryKind,
    /// History depth.
    pub history_depth: i32,
    /// Maximum samples.
    pub max_samples: i32,
    /// Maximum instances.
    pub max_instances: i32,
    /// Maximum samples per instance.
    pub max_samples_per_instance: i32,
}

fixed_value!(
    DurabilityService,
    28,
    |r| Ok(DurabilityService {
        service_cleanup_delay: Duration::read(r)?,
        history_kind: HistoryKind::read(r)?,
        history_depth: r.i32()?,
        max_samples: r.i32()?,
        max_instances: r.i32()?,
        max_samples_per_instance: r.i32()?,
    }),
    |s, w| {
        s.service_cleanup_delay.write(w)?;
        w.u32(s.history_kind.to_u32())?;
        w.i32(s.history_depth)?;
        w.i32(s.max_samples)?;
        w.i32(s.max_instances)?;
        w.i32(s.max_samples_per_instance)
    }
);

#[derive(Debug, Clone, Copy)]
enum SeqRepr<'a, T: 'a> {
    Wire {
        bytes: &'a [u8],
        endian: Endianness,
        count: u32,
    },
    Slice(&'a [T]),
}

/// `PID_PARTITION`: a `sequence<string>`, borrowed. Decoding validates every
/// name; [`Partition::iter`] then yields them without allocating.
#[derive(Debug, Clone, Copy)]
pub struct Partition<'a> {
    repr: SeqRepr<'a, &'a str>,
}

impl<'a> Partition<'a> {
    /// A partition list to emit.
    #[must_use]
    pub const fn from_names(names: &'a [&'a str]) -> Self {
        Self {
            repr: SeqRepr::Slice(names),
        }
    }

    /// Number of names.
    #[must_use]
    pub fn len(&self) -> usize {
        match self.repr {
            SeqRepr::Wire { count, .. } => count as usize,
            SeqRepr::Slice(s) => s.len(),
        }
    }

    /// Whether there are no names (the default partition).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The names in order.
    pub fn iter(&self) -> impl Iterator<Item = &'a str> + 'a {
        let (mut r, mut left, slice): (Reader<'a>, u32, &'a [&'a str]) = match self.repr {
            SeqRepr::Wire {
                bytes,
                endian,
                count,
            } => {
                let mut r = Reader::new(bytes, 0, endian);
                // Skip the count; validated by decode.
                let _ = r.u32();
                (r, count, &[])
            }
            SeqRepr::Slice(s) => (Reader::new(&[], 0, Endianness::Big), 0, s),
        };
        let wire = core::iter::from_fn(move || {
            if left == 0 {
                return None;
            }
            left -= 1;
            r.align(4).ok()?;
            read_string(&mut r).ok()
        });
        slice.iter().copied().chain(wire)
    }
}

impl PartialEq for Partition<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for Partition<'_> {}

impl<'a> ParameterValue<'a> for Partition<'a> {
    fn decode(value: &'a [u8], endian: Endianness) -> Result<Self> {
        decode_with(value, endian, |r| {
            let count = r.u32()?;
            for _ in 0..count {
                r.align(4)?;
                read_string(r)?;
            }
            Ok(Partition {
                repr: SeqRepr::Wire {
                    bytes: value,
                    endian,
                    count,
                },
            })
        })
    }

    fn encoded_len(&self) -> usize {
        self.iter()
            .fold(4, |pos, name| pad4(pos) + string_len(name))
    }

    fn encode(&self, endian: Endianness, out: &mut [u8]) -> Result<usize> {
        let count = u32::try_from(self.len()).map_err(|_| WireError::TooLong {
            length: self.len(),
            max: u32::MAX as usize,
        })?;
        encode_with(out, endian, self.encoded_len(), |w| {
            w.u32(count)?;
            for name in self.iter() {
                w.pad4()?;
                write_string(w, name)?;
            }
            Ok(())
        })
    }
}

/// Data representation identifiers.
pub mod data_representation {
    /// XCDR1.
    pub const XCDR: i16 = 0;
    /// XML.
    pub const XML: i16 = 1;
    /// XCDR2.
    pub const XCDR2: i16 = 2;
}

/// `PID_DATA_REPRESENTATION`: a `sequence<short>` of representation ids
/// (absent = XCDR1 only), borrowed.
#[derive(Debug, Clone, Copy)]
pub struct DataRepresentation<'a> {
    repr: SeqRepr<'a, i16>,
}

impl<'a> DataRepresentation<'a> {
    /// A list to emit.
    #[must_use]
    pub const fn from_slice(ids: &'a [i16]) -> Self {
        Self {
            repr: SeqRepr::Slice(ids),
        }
    }

    /// Number of ids.
    #[must_use]
    pub fn len(&self) -> usize {
        match self.repr {
            SeqRepr::Wire { count, .. } => count as usize,
            SeqRepr::Slice(s) => s.len(),
        }
    }

    /// Whether the list is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The ids in order.
    pub fn iter(&self) -> impl Iterator<Item = i16> + 'a {
        let (bytes, endian, slice): (&'a [u8], Endianness, &'a [i16]) = match self.repr {
            SeqRepr::Wire {
                bytes,
                endian,
                count,
            } => (
                bytes.get(4..4 + 2 * count as usize).unwrap_or(&[]),
                endian,
                &[],
            ),
            SeqRepr::Slice(s) => (&[], Endianness::Big, s),
        };
        let wire = bytes.chunks_exact(2).map(move |c| {
            let a = [c[0], c[1]];
            match endian {
                Endianness::Big => i16::from_be_bytes(a),
                Endianness::Little => i16::from_le_bytes(a),
            }
        });
        slice.iter().copied().chain(wire)
    }
}

impl PartialEq for DataRepresentation<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for DataRepresentation<'_> {}

impl<'a> ParameterValue<'a> for DataRepresentation<'a> {
    fn decode(value: &'a [u8], endian: Endianness) -> Result<Self> {
        decode_with(value, endian, |r| {
            let count = r.u32()?;
            let have = r.remaining();
            match (count as usize).checked_mul(2) {
                Some(n) if n <= have => {}
                n => {
                    return Err(WireError::Truncated {
                        offset: 4,
                        needed: n.unwrap_or(usize::MAX),
                        have,
                    })
                }
            }
            Ok(DataRepresentation {
                repr: SeqRepr::Wire {
                    bytes: value,
                    endian,
                    count,
                },
            })
        })
    }

    fn encoded_len(&self) -> usize {
        4 + 2 * self.len()
    }

    fn encode(&self, endian: Endianness, out: &mut [u8]) -> Result<usize> {
        let count = u32::try_from(self.len()).map_err(|_| WireError::TooLong {
            length: self.len(),
            max: u32::MAX as usize,
        })?;
        encode_with(out, endian, self.encoded_len(), |w| {
            w.u32(count)?;
            for id in self.iter() {
                w.i16(id)?;
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<'a, T: ParameterValue<'a> + PartialEq + core::fmt::Debug>(
        v: &T,
        endian: Endianness,
        buf: &'a mut [u8],
    ) -> T {
        let n = v.encode(endian, buf).unwrap();
        assert_eq!(n, v.encoded_len());
        let buf: &'a [u8] = buf;
        T::decode(&buf[..n], endian).unwrap()
    }

    #[test]
    fn reliability_golden() {
        // RELIABLE, max_blocking_time 0.1 s (fraction 0x1999999a) in BE
        let be = [0, 0, 0, 2, 0, 0, 0, 0, 0x19, 0x99, 0x99, 0x9a];
        let r = Reliability::decode(&be, Endianness::Big).unwrap();
        assert_eq!(r.kind, ReliabilityKind::Reliable);
        assert_eq!(r.max_blocking_time, Duration::from_nanos(100_000_000));
        let mut out = [0u8; 12];
        r.encode(Endianness::Little, &mut out).unwrap();
        assert_eq!(out, [2, 0, 0, 0, 0, 0, 0, 0, 0x9a, 0x99, 0x99, 0x19]);
        assert_eq!(
            Reliability::decode(&[0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0], Endianness::Big),
            Err(WireError::InvalidEnum {
                what: "reliability kind",
                value: 3
            })
        );
    }

    #[test]
    fn partition_golden_both_orders() {
        // 2 names: "a" (len 2: 'a' NUL, pad 2), "bcd" (len 4)
        let be = [
            0, 0, 0, 2, // count
            0, 0, 0, 2, b'a', 0, 0, 0, // "a" + pad
            0, 0, 0, 4, b'b', b'c', b'd', 0, // "bcd"
        ];
        let p = Partition::decode(&be, Endianness::Big).unwrap();
        assert_eq!(p.len(), 2);
        let mut it = p.iter();
        assert_eq!(it.next(), Some("a"));
        assert_eq!(it.next(), Some("bcd"));
        assert_eq!(it.next(), None);
        let names = ["a", "bcd"];
        let mine = Partition::from_names(&names);
        assert_eq!(mine, p);
        assert_eq!(mine.encoded_len(), 20);
        let mut out = [0u8; 20];
        mine.encode(Endianness::Big, &mut out).unwrap();
        assert_eq!(out, be);
        let mut le_buf = [0u8; 20];
        assert_eq!(round_trip(&mine, Endianness::Little, &mut le_buf), mine);
        assert_eq!(le_buf[..4], [2, 0, 0, 0]);
        // a huge count with no data fails without allocating
        assert!(Partition::decode(&[0xff, 0xff, 0xff, 0xff], Endianness::Big).is_err());
    }

    #[test]
    fn data_representation_golden() {
        let le = [2, 0, 0, 0, 2, 0, 0, 0];
        let d = DataRepresentation::decode(&le, Endianness::Little).unwrap();
        let ids = [data_representation::XCDR2, data_representation::XCDR];
        assert_eq!(d, DataRepresentation::from_slice(&ids));
        let mut out = [0u8; 8];
        DataRepresentation::from_slice(&ids)
            .encode(Endianness::Little, &mut out)
            .unwrap();
        assert_eq!(out, le);
        assert!(matches!(
            DataRepresentation::decode(&[0, 0, 0, 9, 0, 1], Endianness::Big),
            Err(WireError::Truncated { .. })
        ));
    }

    #[test]
    fn fixed_policies_round_trip() {
        let mut b = [0u8; 32];
        let h = History {
            kind: HistoryKind::KeepLast,
            depth: 10,
        };
        assert_eq!(round_trip(&h, Endianness::Big, &mut b), h);
        assert_eq!(b[..8], [0, 0, 0, 0, 0, 0, 0, 10]);
        let p = Presentation {
            access_scope: PresentationAccessScope::Topic,
            coherent_access: true,
            ordered_access: false,
        };
        let mut b = [0u8; 32];
        assert_eq!(round_trip(&p, Endianness::Little, &mut b), p);
        assert_eq!(b[..6], [1, 0, 0, 0, 1, 0]);
        let ds = DurabilityService {
            service_cleanup_delay: Duration::ZERO,
            history_kind: HistoryKind::KeepAll,
            history_depth: 1,
            max_samples: -1,
            max_instances: -1,
            max_samples_per_instance: -1,
        };
        let mut b = [0u8; 32];
        assert_eq!(round_trip(&ds, Endianness::Big, &mut b), ds);
    }
}
