//! DDS Security tokens (`DataHolder`) and the `ParticipantGenericMessage` carried on the
//! builtin stateless (`DCPSParticipantStatelessMessage`) and volatile-secure
//! (`DCPSParticipantVolatileMessageSecure`) topics.
//!
//! # Contract
//!
//! * **Layout** (XCDR1, final types, alignment from the first byte of the body — the byte
//!   after the 4-byte encapsulation header): `message_identity` {source GUID (16 octets),
//!   sequence number (i64, 8-aligned)}, `related_message_identity` (same), then the
//!   destination participant, destination endpoint and source endpoint GUIDs (16 octets
//!   each), `message_class_id` (string), `message_data` (sequence of [`DataHolder`]). A
//!   `DataHolder` is `class_id` (string), `properties` (sequence of {name, value} strings)
//!   and `binary_properties` (sequence of {name string, value `sequence<octet>`}). The
//!   `propagate` flag of the IDL is **not on the wire**: only propagated properties are
//!   sent (Cyclone's `XbPROP`), and every decoded property is propagated. GUIDs are copied
//!   as bytes whatever the endianness.
//! * **Decoding** accepts both endiannesses (given explicitly to [`ParticipantGenericMessage::
//!   decode`], or read from the encapsulation header by [`ParticipantGenericMessage::
//!   decode_payload`]); bytes after the message (RTPS padding) are ignored. Sequence lengths
//!   are bounded ([`MAX_DATA_HOLDERS`], [`MAX_PROPERTIES`]) and checked against the input
//!   left before anything is allocated, so a length field cannot make the decoder allocate
//!   more than the input's size. Every failure is a typed [`GenericMessageError`] naming the
//!   field; nothing panics on any input.
//! * [`serialize_binary_properties`] is the big-endian CDR of a `BinaryPropertySeq` that the
//!   PKI-DH handshake hashes and signs (Cyclone's `DDS_Security_Serialize_BinaryPropertyArray`).
//! * Pure: no I/O, no clock, no randomness.

use ferrodds_cdr::encapsulation::{CDR_BE, CDR_LE};
use ferrodds_cdr::{CdrError, CdrReader, CdrWriter, Encoding, Endianness};

/// A GUID (prefix 12 octets + entity id 4 octets) as it appears on the wire.
pub type GuidBytes = [u8; 16];

/// The all-zero GUID (`GUID_UNKNOWN`), used for absent destination/related fields.
pub const GUID_UNKNOWN: GuidBytes = [0; 16];

/// Entity id of a participant (0x000001c1).
pub const ENTITYID_PARTICIPANT: [u8; 4] = [0x00, 0x00, 0x01, 0xc1];
/// Entity id of the builtin `DCPSParticipantStatelessMessage` writer (0x000201c3).
pub const ENTITYID_P2P_PARTICIPANT_STATELESS_MESSAGE_WRITER: [u8; 4] = [0x00, 0x02, 0x01, 0xc3];
/// Entity id of the builtin `DCPSParticipantStatelessMessage` reader (0x000201c4).
pub const ENTITYID_P2P_PARTICIPANT_STATELESS_MESSAGE_READER: [u8; 4] = [0x00, 0x02, 0x01, 0xc4];
/// Entity id of the builtin `DCPSParticipantVolatileMessageSecure` writer (0xff0202c3).
pub const ENTITYID_P2P_PARTICIPANT_VOLATILE_MESSAGE_SECURE_WRITER: [u8; 4] =
    [0xff, 0x02, 0x02, 0xc3];
/// Entity id of the builtin `DCPSParticipantVolatileMessageSecure` reader (0xff0202c4).
pub const ENTITYID_P2P_PARTICIPANT_VOLATILE_MESSAGE_SECURE_READER: [u8; 4] =
    [0xff, 0x02, 0x02, 0xc4];

/// `message_class_id` of handshake messages (`dds.sec.auth`).
pub const GMCLASSID_SECURITY_AUTH_HANDSHAKE: &str = "dds.sec.auth";
/// `message_class_id` of an authentication request (`dds.sec.auth_request`).
pub const GMCLASSID_SECURITY_AUTH_REQUEST: &str = "dds.sec.auth_request";
/// `message_class_id` of participant crypto tokens on the volatile-secure topic.
pub const GMCLASSID_SECURITY_PARTICIPANT_CRYPTO_TOKENS: &str = "dds.sec.participant_crypto_tokens";
/// `message_class_id` of data-writer crypto tokens on the volatile-secure topic.
pub const GMCLASSID_SECURITY_DATAWRITER_CRYPTO_TOKENS: &str = "dds.sec.datawriter_crypto_tokens";
/// `message_class_id` of data-reader crypto tokens on the volatile-secure topic.
pub const GMCLASSID_SECURITY_DATAREADER_CRYPTO_TOKENS: &str = "dds.sec.datareader_crypto_tokens";

/// Most `DataHolder`s accepted in one message's `message_data`.
pub const MAX_DATA_HOLDERS: usize = 64;
/// Most properties (and, separately, binary properties) accepted in one `DataHolder`.
pub const MAX_PROPERTIES: usize = 256;

/// What went wrong decoding or encoding a token or generic message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GenericMessageError {
    /// The CDR of a field is malformed or truncated.
    #[error("ParticipantGenericMessage field {field}: {source}")]
    Cdr {
        /// The field being read or written.
        field: &'static str,
        /// The CDR layer's reason.
        source: CdrError,
    },
    /// A sequence length above this module's bound.
    #[error("ParticipantGenericMessage field {field}: {count} elements exceed the bound {bound}")]
    TooMany {
        /// The sequence.
        field: &'static str,
        /// Length found on the wire.
        count: usize,
        /// The bound ([`MAX_DATA_HOLDERS`] or [`MAX_PROPERTIES`]).
        bound: usize,
    },
    /// The serialized payload is shorter than its 4-byte encapsulation header.
    #[error("serialized payload of {0} bytes has no 4-byte encapsulation header")]
    NoEncapsulation(usize),
    /// An encapsulation other than plain CDR (0x0000 / 0x0001).
    #[error(
        "unsupported encapsulation {0:#06x} for ParticipantGenericMessage (want CDR_BE or CDR_LE)"
    )]
    Encapsulation(u16),
}

fn cdr(field: &'static str) -> impl FnOnce(CdrError) -> GenericMessageError {
    move |source| GenericMessageError::Cdr { field, source }
}

/// A `{name, value}` string property.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Property {
    /// Property name.
    pub name: String,
    /// Property value.
    pub value: String,
}

/// A `{name, value}` property whose value is octets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BinaryProperty {
    /// Property name.
    pub name: String,
    /// Property value.
    pub value: Vec<u8>,
}

impl Property {
    /// A property from its name and value.
    pub fn new(name: impl Into<String>, value: impl Into<String>) -> Self {
        Property {
            name: name.into(),
            value: value.into(),
        }
    }
}

impl BinaryProperty {
    /// A binary property from its name and value.
    pub fn new(name: impl Into<String>, value: impl Into<Vec<u8>>) -> Self {
        BinaryProperty {
            name: name.into(),
            value: value.into(),
        }
    }
}

/// A DDS Security token: `class_id`, properties and binary properties.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DataHolder {
    /// Token class, e.g. `DDS:Auth:PKI-DH:1.0+Req`.
    pub class_id: String,
    /// String properties.
    pub properties: Vec<Property>,
    /// Binary properties.
    pub binary_properties: Vec<BinaryProperty>,
}

impl DataHolder {
    /// An empty token of class `class_id`.
    pub fn new(class_id: impl Into<String>) -> Self {
        DataHolder {
            class_id: class_id.into(),
            ..Default::default()
        }
    }

    /// The value of the first property named `name`.
    pub fn property(&self, name: &str) -> Option<&str> {
        self.properties
            .iter()
            .find(|p| p.name == name)
            .map(|p| p.value.as_str())
    }

    /// The value of the first binary property named `name`.
    pub fn binary_property(&self, name: &str) -> Option<&[u8]> {
        self.binary_properties
            .iter()
            .find(|p| p.name == name)
            .map(|p| p.value.as_slice())
    }

    /// Appends this token's CDR to `w`.
    pub fn encode(&self, w: &mut CdrWriter<'_>) -> Result<(), GenericMessageError> {
        w.write_string(&self.class_id).map_err(cdr("class_id"))?;
        w.write_len(self.properties.len())
            .map_err(cdr("properties"))?;
        for p in &self.properties {
            w.write_string(&p.name).map_err(cdr("property.name"))?;
            w.write_string(&p.value).map_err(cdr("property.value"))?;
        }
        w.write_len(self.binary_properties.len())
            .map_err(cdr("binary_properties"))?;
        for p in &self.binary_properties {
            w.write_string(&p.name)
                .map_err(cdr("binary_property.name"))?;
            w.write_bytes(&p.value)
                .map_err(cdr("binary_property.value"))?;
        }
        Ok(())
    }

    /// Reads one token from `r`.
    pub fn decode(r: &mut CdrReader<'_>) -> Result<Self, GenericMessageError> {
        let class_id = r.read_string().map_err(cdr("class_id"))?;
        // A property is at least two 4-byte string lengths.
        let n = read_count(r, "properties", MAX_PROPERTIES, 8)?;
        let mut properties = Vec::with_capacity(n);
        for _ in 0..n {
            let name = r.read_string().map_err(cdr("property.name"))?;
            let value = r.read_string().map_err(cdr("property.value"))?;
            properties.push(Property { name, value });
        }
        let n = read_count(r, "binary_properties", MAX_PROPERTIES, 8)?;
        let mut binary_properties = Vec::with_capacity(n);
        for _ in 0..n {
            let name = r.read_string().map_err(cdr("binary_property.name"))?;
            let value = r
                .read_bytes()
                .map_err(cdr("binary_property.value"))?
                .to_vec();
            binary_properties.push(BinaryProperty { name, value });
        }
        Ok(DataHolder {
            class_id,
            properties,
            binary_properties,
        })
    }
}

/// Reads a sequence length, checks it against `bound` and against the input left (each
/// element being at least `min_size` bytes).
fn read_count(
    r: &mut CdrReader<'_>,
    field: &'static str,
    bound: usize,
    min_size: usize,
) -> Result<usize, GenericMessageError> {
    let n = r.read_len().map_err(cdr(field))?;
    if n > bound {
        return Err(GenericMessageError::TooMany {
            field,
            count: n,
            bound,
        });
    }
    r.check_count(n, min_size).map_err(cdr(field))?;
    Ok(n)
}

/// `{source GUID, sequence number}` identifying one generic message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MessageIdentity {
    /// GUID of the writer (or participant) that sent the message.
    pub source_guid: GuidBytes,
    /// Sequence number, increasing per source.
    pub sequence_number: i64,
}

/// The sample type of the stateless and volatile-secure builtin topics.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ParticipantGenericMessage {
    /// This message's identity.
    pub message_identity: MessageIdentity,
    /// The identity of the message this one answers (zero when none).
    pub related_message_identity: MessageIdentity,
    /// Participant the message is for (zero: every participant).
    pub destination_participant_guid: GuidBytes,
    /// Endpoint the message is for (zero: none in particular).
    pub destination_endpoint_guid: GuidBytes,
    /// Endpoint the message is about (zero: none).
    pub source_endpoint_guid: GuidBytes,
    /// Message class, e.g. [`GMCLASSID_SECURITY_AUTH_HANDSHAKE`].
    pub message_class_id: String,
    /// The tokens.
    pub message_data: Vec<DataHolder>,
}

fn endianness_encoding(e: Endianness) -> Encoding {
    match e {
        Endianness::Big => Encoding::XCDR1_BE,
        Endianness::Little => Encoding::XCDR1_LE,
    }
}

fn read_guid(r: &mut CdrReader<'_>, field: &'static str) -> Result<GuidBytes, GenericMessageError> {
    let b = r.read_raw(16).map_err(cdr(field))?;
    let mut g = [0u8; 16];
    g.copy_from_slice(b);
    Ok(g)
}

fn read_identity(
    r: &mut CdrReader<'_>,
    field: &'static str,
) -> Result<MessageIdentity, GenericMessageError> {
    let source_guid = read_guid(r, field)?;
    let sequence_number = r.read_i64().map_err(cdr(field))?;
    Ok(MessageIdentity {
        source_guid,
        sequence_number,
    })
}

impl ParticipantGenericMessage {
    /// A `dds.sec.auth` handshake message as Cyclone writes it: from the stateless writer
    /// `source_writer` (its GUID, sequence number `sequence_number`) to the participant
    /// `destination_participant`, answering `related` (the Request's identity for a Reply,
    /// the Reply's for a Final; zero for a Request), endpoint GUIDs zero, one token.
    pub fn auth_handshake(
        source_writer: GuidBytes,
        sequence_number: i64,
        destination_participant: GuidBytes,
        related: Option<MessageIdentity>,
        token: DataHolder,
    ) -> Self {
        ParticipantGenericMessage {
            message_identity: MessageIdentity {
                source_guid: source_writer,
                sequence_number,
            },
            related_message_identity: related.unwrap_or_default(),
            destination_participant_guid: destination_participant,
            destination_endpoint_guid: GUID_UNKNOWN,
            source_endpoint_guid: GUID_UNKNOWN,
            message_class_id: GMCLASSID_SECURITY_AUTH_HANDSHAKE.into(),
            message_data: vec![token],
        }
    }

    /// Appends the CDR body (no encapsulation header) in `endianness` to `out`; alignment
    /// counts from `out.len()` at the call.
    pub fn encode(
        &self,
        endianness: Endianness,
        out: &mut Vec<u8>,
    ) -> Result<(), GenericMessageError> {
        let mut w = CdrWriter::new(out, endianness_encoding(endianness));
        for id in [&self.message_identity, &self.related_message_identity] {
            w.write_raw(&id.source_guid);
            w.write_i64(id.sequence_number);
        }
        w.write_raw(&self.destination_participant_guid);
        w.write_raw(&self.destination_endpoint_guid);
        w.write_raw(&self.source_endpoint_guid);
        w.write_string(&self.message_class_id)
            .map_err(cdr("message_class_id"))?;
        w.write_len(self.message_data.len())
            .map_err(cdr("message_data"))?;
        for h in &self.message_data {
            h.encode(&mut w)?;
        }
        Ok(())
    }

    /// Appends a serialized payload: the CDR_LE/CDR_BE encapsulation header and the body.
    pub fn encode_payload(
        &self,
        endianness: Endianness,
        out: &mut Vec<u8>,
    ) -> Result<(), GenericMessageError> {
        let id = match endianness {
            Endianness::Big => CDR_BE,
            Endianness::Little => CDR_LE,
        };
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&[0, 0]);
        self.encode(endianness, out)
    }

    /// Decodes a CDR body (no encapsulation header) in `endianness`.
    pub fn decode(body: &[u8], endianness: Endianness) -> Result<Self, GenericMessageError> {
        let mut r = CdrReader::new(body, endianness_encoding(endianness));
        let message_identity = read_identity(&mut r, "message_identity")?;
        let related_message_identity = read_identity(&mut r, "related_message_identity")?;
        let destination_participant_guid = read_guid(&mut r, "destination_participant_guid")?;
        let destination_endpoint_guid = read_guid(&mut r, "destination_endpoint_guid")?;
        let source_endpoint_guid = read_guid(&mut r, "source_endpoint_guid")?;
        let message_class_id = r.read_string().map_err(cdr("message_class_id"))?;
        // A DataHolder is at least a class_id length and two sequence lengths.
        let n = read_count(&mut r, "message_data", MAX_DATA_HOLDERS, 12)?;
        let mut message_data = Vec::with_capacity(n);
        for _ in 0..n {
            message_data.push(DataHolder::decode(&mut r)?);
        }
        Ok(ParticipantGenericMessage {
            message_identity,
            related_message_identity,
            destination_participant_guid,
            destination_endpoint_guid,
            source_endpoint_guid,
            message_class_id,
            message_data,
        })
    }

    /// Decodes a serialized payload: a CDR_BE/CDR_LE encapsulation header and the body.
    pub fn decode_payload(payload: &[u8]) -> Result<Self, GenericMessageError> {
        if payload.len() < 4 {
            return Err(GenericMessageError::NoEncapsulation(payload.len()));
        }
        let id = u16::from_be_bytes([payload[0], payload[1]]);
        let e = match id {
            CDR_BE => Endianness::Big,
            CDR_LE => Endianness::Little,
            other => return Err(GenericMessageError::Encapsulation(other)),
        };
        Self::decode(&payload[4..], e)
    }
}

/// Appends the big-endian CDR of the `BinaryPropertySeq` made of `props` in this order: the
/// bytes the PKI-DH handshake hashes (`hash_c1`, `hash_c2`) and signs.
pub fn serialize_binary_properties(
    props: &[&BinaryProperty],
    out: &mut Vec<u8>,
) -> Result<(), GenericMessageError> {
    let mut w = CdrWriter::new(out, Encoding::XCDR1_BE);
    w.write_len(props.len()).map_err(cdr("binary_properties"))?;
    for p in props {
        w.write_string(&p.name)
            .map_err(cdr("binary_property.name"))?;
        w.write_bytes(&p.value)
            .map_err(cdr("binary_property.value"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_property_seq_is_big_endian_cdr() {
        let a = BinaryProperty::new("ab", vec![1u8]);
        let b = BinaryProperty::new("c", Vec::<u8>::new());
        let mut out = Vec::new();
        serialize_binary_properties(&[&a, &b], &mut out).unwrap();
        #[rustfmt::skip]
        let want = [
            0, 0, 0, 2,             // count
            0, 0, 0, 3, b'a', b'b', 0, 0, // "ab" + NUL + pad
            0, 0, 0, 1, 1,          // [1]
            0, 0, 0,                // pad to 4 before the next length
            0, 0, 0, 2, b'c', 0, 0, 0, // "c" + NUL + pad
            0, 0, 0, 0,             // []
        ];
        assert_eq!(out, want);
    }
}
