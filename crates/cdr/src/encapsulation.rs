//! The 4-byte serialized-payload header (RTPS 2.5 §10, XTypes 1.3 §7.6.3.1.2).
//!
//! `representation identifier (u16, always big-endian) | options (u16, big-endian)`.
//! The low two bits of the options carry the number of padding bytes appended to the body
//! to make it a multiple of 4.

use crate::error::CdrError;

/// `CDR_BE`: XCDR1, big-endian (final and appendable types).
pub const CDR_BE: u16 = 0x0000;
/// `CDR_LE`: XCDR1, little-endian (final and appendable types).
pub const CDR_LE: u16 = 0x0001;
/// `PL_CDR_BE`: XCDR1 parameter list, big-endian (mutable types).
pub const PL_CDR_BE: u16 = 0x0002;
/// `PL_CDR_LE`: XCDR1 parameter list, little-endian (mutable types).
pub const PL_CDR_LE: u16 = 0x0003;
/// `XML`: not CDR; reported as [`CdrError::UnsupportedEncapsulation`].
pub const XML: u16 = 0x0004;
/// `CDR2_BE`: XCDR2, big-endian, final types.
pub const CDR2_BE: u16 = 0x0006;
/// `CDR2_LE`: XCDR2, little-endian, final types.
pub const CDR2_LE: u16 = 0x0007;
/// `D_CDR2_BE`: XCDR2 delimited, big-endian, appendable types.
pub const D_CDR2_BE: u16 = 0x0008;
/// `D_CDR2_LE`: XCDR2 delimited, little-endian, appendable types.
pub const D_CDR2_LE: u16 = 0x0009;
/// `PL_CDR2_BE`: XCDR2 parameter list, big-endian, mutable types.
pub const PL_CDR2_BE: u16 = 0x000a;
/// `PL_CDR2_LE`: XCDR2 parameter list, little-endian, mutable types.
pub const PL_CDR2_LE: u16 = 0x000b;

/// Mask of the padding-count bits in the options field.
pub const OPTIONS_PADDING_MASK: u16 = 0x0003;

/// Byte order of a CDR stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Endianness {
    /// Most significant byte first.
    Big,
    /// Least significant byte first.
    Little,
}

impl Endianness {
    /// The byte order of the machine running this code.
    pub const fn native() -> Self {
        if cfg!(target_endian = "big") {
            Endianness::Big
        } else {
            Endianness::Little
        }
    }
}

/// Extended CDR version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum XcdrVersion {
    /// XCDR1 (classic CDR; 8-byte types aligned to 8; mutable = PL_CDR).
    Xcdr1,
    /// XCDR2 (alignment capped at 4; DHEADER and EMHEADER).
    Xcdr2,
}

/// Type extensibility kind (XTypes `@final`, `@appendable`, `@mutable`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Extensibility {
    /// No evolution; members in order, no headers.
    Final,
    /// Members may be appended; XCDR2 prefixes a DHEADER.
    Appendable,
    /// Members are identified by id; XCDR1 parameter list, XCDR2 DHEADER + EMHEADERs.
    Mutable,
}

/// A CDR version plus byte order: everything a writer or reader needs besides the type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Encoding {
    /// XCDR version.
    pub version: XcdrVersion,
    /// Byte order.
    pub endianness: Endianness,
}

impl Encoding {
    /// XCDR1 little-endian (what Cyclone sends for final types on x86).
    pub const XCDR1_LE: Encoding = Encoding {
        version: XcdrVersion::Xcdr1,
        endianness: Endianness::Little,
    };
    /// XCDR1 big-endian.
    pub const XCDR1_BE: Encoding = Encoding {
        version: XcdrVersion::Xcdr1,
        endianness: Endianness::Big,
    };
    /// XCDR2 little-endian.
    pub const XCDR2_LE: Encoding = Encoding {
        version: XcdrVersion::Xcdr2,
        endianness: Endianness::Little,
    };
    /// XCDR2 big-endian.
    pub const XCDR2_BE: Encoding = Encoding {
        version: XcdrVersion::Xcdr2,
        endianness: Endianness::Big,
    };

    /// Largest alignment used by this encoding (8 for XCDR1, 4 for XCDR2).
    pub const fn max_align(self) -> usize {
        match self.version {
            XcdrVersion::Xcdr1 => 8,
            XcdrVersion::Xcdr2 => 4,
        }
    }
}

/// A CDR serialized-payload representation identifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Representation {
    /// [`CDR_BE`]
    CdrBe,
    /// [`CDR_LE`]
    CdrLe,
    /// [`PL_CDR_BE`]
    PlCdrBe,
    /// [`PL_CDR_LE`]
    PlCdrLe,
    /// [`CDR2_BE`]
    Cdr2Be,
    /// [`CDR2_LE`]
    Cdr2Le,
    /// [`D_CDR2_BE`]
    DCdr2Be,
    /// [`D_CDR2_LE`]
    DCdr2Le,
    /// [`PL_CDR2_BE`]
    PlCdr2Be,
    /// [`PL_CDR2_LE`]
    PlCdr2Le,
}

impl Representation {
    /// The 16-bit identifier as it appears (big-endian) on the wire.
    pub const fn id(self) -> u16 {
        match self {
            Representation::CdrBe => CDR_BE,
            Representation::CdrLe => CDR_LE,
            Representation::PlCdrBe => PL_CDR_BE,
            Representation::PlCdrLe => PL_CDR_LE,
            Representation::Cdr2Be => CDR2_BE,
            Representation::Cdr2Le => CDR2_LE,
            Representation::DCdr2Be => D_CDR2_BE,
            Representation::DCdr2Le => D_CDR2_LE,
            Representation::PlCdr2Be => PL_CDR2_BE,
            Representation::PlCdr2Le => PL_CDR2_LE,
        }
    }

    /// Parses an identifier; XML and unknown values are typed errors.
    pub const fn from_id(id: u16) -> Result<Self, CdrError> {
        Ok(match id {
            CDR_BE => Representation::CdrBe,
            CDR_LE => Representation::CdrLe,
            PL_CDR_BE => Representation::PlCdrBe,
            PL_CDR_LE => Representation::PlCdrLe,
            CDR2_BE => Representation::Cdr2Be,
            CDR2_LE => Representation::Cdr2Le,
            D_CDR2_BE => Representation::DCdr2Be,
            D_CDR2_LE => Representation::DCdr2Le,
            PL_CDR2_BE => Representation::PlCdr2Be,
            PL_CDR2_LE => Representation::PlCdr2Le,
            XML => return Err(CdrError::UnsupportedEncapsulation(id)),
            _ => return Err(CdrError::UnknownEncapsulation(id)),
        })
    }

    /// XCDR version and byte order implied by the identifier.
    pub const fn encoding(self) -> Encoding {
        // Every pair is (BE, LE) with the LE id odd.
        let endianness = if self.id() & 1 == 1 {
            Endianness::Little
        } else {
            Endianness::Big
        };
        let version = match self {
            Representation::CdrBe
            | Representation::CdrLe
            | Representation::PlCdrBe
            | Representation::PlCdrLe => XcdrVersion::Xcdr1,
            _ => XcdrVersion::Xcdr2,
        };
        Encoding {
            version,
            endianness,
        }
    }

    /// The identifier a writer uses for a type of `extensibility` in `encoding`
    /// (XCDR1: CDR for final/appendable, PL_CDR for mutable; XCDR2: CDR2, D_CDR2, PL_CDR2).
    pub const fn for_type(extensibility: Extensibility, encoding: Encoding) -> Self {
        let le = matches!(encoding.endianness, Endianness::Little);
        match (encoding.version, extensibility, le) {
            (XcdrVersion::Xcdr1, Extensibility::Mutable, false) => Representation::PlCdrBe,
            (XcdrVersion::Xcdr1, Extensibility::Mutable, true) => Representation::PlCdrLe,
            (XcdrVersion::Xcdr1, _, false) => Representation::CdrBe,
            (XcdrVersion::Xcdr1, _, true) => Representation::CdrLe,
            (XcdrVersion::Xcdr2, Extensibility::Final, false) => Representation::Cdr2Be,
            (XcdrVersion::Xcdr2, Extensibility::Final, true) => Representation::Cdr2Le,
            (XcdrVersion::Xcdr2, Extensibility::Appendable, false) => Representation::DCdr2Be,
            (XcdrVersion::Xcdr2, Extensibility::Appendable, true) => Representation::DCdr2Le,
            (XcdrVersion::Xcdr2, Extensibility::Mutable, false) => Representation::PlCdr2Be,
            (XcdrVersion::Xcdr2, Extensibility::Mutable, true) => Representation::PlCdr2Le,
        }
    }
}

/// A parsed encapsulation header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EncapsulationHeader {
    /// Representation identifier.
    pub representation: Representation,
    /// Raw options field (host order); see [`EncapsulationHeader::padding`].
    pub options: u16,
}

impl EncapsulationHeader {
    /// Size of the header on the wire.
    pub const LEN: usize = 4;

    /// A header with no padding bits.
    pub const fn new(representation: Representation) -> Self {
        EncapsulationHeader {
            representation,
            options: 0,
        }
    }

    /// Parses the first 4 bytes of a serialized payload and returns the header and the
    /// rest of the payload (the body, still including any trailing padding).
    pub fn parse(payload: &[u8]) -> Result<(Self, &[u8]), CdrError> {
        let Some((head, body)) = payload.split_first_chunk::<4>() else {
            return Err(CdrError::Truncated {
                offset: 0,
                needed: 4,
                have: payload.len(),
            });
        };
        let representation = Representation::from_id(u16::from_be_bytes([head[0], head[1]]))?;
        let options = u16::from_be_bytes([head[2], head[3]]);
        Ok((
            EncapsulationHeader {
                representation,
                options,
            },
            body,
        ))
    }

    /// The header's 4 wire bytes.
    pub const fn to_bytes(self) -> [u8; 4] {
        let id = self.representation.id().to_be_bytes();
        let opt = self.options.to_be_bytes();
        [id[0], id[1], opt[0], opt[1]]
    }

    /// Number of padding bytes (0..=3) at the end of the body, from the options field.
    pub const fn padding(self) -> usize {
        (self.options & OPTIONS_PADDING_MASK) as usize
    }

    /// Returns the header with its padding bits set to `padding & 3`.
    pub const fn with_padding(self, padding: usize) -> Self {
        EncapsulationHeader {
            representation: self.representation,
            options: (self.options & !OPTIONS_PADDING_MASK)
                | (padding as u16 & OPTIONS_PADDING_MASK),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Representation; 10] = [
        Representation::CdrBe,
        Representation::CdrLe,
        Representation::PlCdrBe,
        Representation::PlCdrLe,
        Representation::Cdr2Be,
        Representation::Cdr2Le,
        Representation::DCdr2Be,
        Representation::DCdr2Le,
        Representation::PlCdr2Be,
        Representation::PlCdr2Le,
    ];

    #[test]
    fn ids_round_trip() {
        for r in ALL {
            assert_eq!(Representation::from_id(r.id()), Ok(r));
            let h = EncapsulationHeader::new(r).with_padding(3);
            let bytes = h.to_bytes();
            assert_eq!(bytes[0], 0);
            assert_eq!(bytes[1] as u16, r.id());
            assert_eq!(bytes[3], 3);
            let payload = [bytes[0], bytes[1], 0, 3, 9];
            let (p, body) = EncapsulationHeader::parse(&payload).unwrap();
            assert_eq!(p, h);
            assert_eq!(p.padding(), 3);
            assert_eq!(body, &[9]);
        }
    }

    #[test]
    fn encodings() {
        assert_eq!(Representation::CdrLe.encoding(), Encoding::XCDR1_LE);
        assert_eq!(Representation::PlCdrBe.encoding(), Encoding::XCDR1_BE);
        assert_eq!(Representation::DCdr2Le.encoding(), Encoding::XCDR2_LE);
        assert_eq!(Representation::PlCdr2Be.encoding(), Encoding::XCDR2_BE);
        for r in ALL {
            let e = r.encoding();
            let ext = match r {
                Representation::PlCdrBe
                | Representation::PlCdrLe
                | Representation::PlCdr2Be
                | Representation::PlCdr2Le => Extensibility::Mutable,
                Representation::DCdr2Be | Representation::DCdr2Le => Extensibility::Appendable,
                _ => Extensibility::Final,
            };
            assert_eq!(Representation::for_type(ext, e), r);
        }
        assert_eq!(
            Representation::for_type(Extensibility::Appendable, Encoding::XCDR1_LE),
            Representation::CdrLe
        );
    }

    #[test]
    fn unknown_and_xml() {
        assert_eq!(
            EncapsulationHeader::parse(&[0x00, 0x05, 0, 0]),
            Err(CdrError::UnknownEncapsulation(5))
        );
        assert_eq!(
            EncapsulationHeader::parse(&[0xc0, 0x00, 0, 0]),
            Err(CdrError::UnknownEncapsulation(0xc000))
        );
        assert_eq!(
            EncapsulationHeader::parse(&[0x00, 0x04, 0, 0]),
            Err(CdrError::UnsupportedEncapsulation(4))
        );
        assert_eq!(
            EncapsulationHeader::parse(&[0x00, 0x01, 0]),
            Err(CdrError::Truncated {
                offset: 0,
                needed: 4,
                have: 3
            })
        );
    }
}
