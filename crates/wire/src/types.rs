//! Common RTPS wire types (DDSI-RTPS 2.5 §8.2, §9.3, §9.4.2).

use core::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4};

use crate::codec::{Reader, Writer};
use crate::error::{Result, WireError};

/// Types with a fixed CDR wire form inside submessages and parameters.
pub(crate) trait WireType: Sized {
    fn read(r: &mut Reader<'_>) -> Result<Self>;
    fn write(&self, w: &mut Writer<'_>) -> Result<()>;
}

/// RTPS protocol version (§9.3.2, `ProtocolVersion_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProtocolVersion {
    /// Major version; only 2 is accepted in message headers.
    pub major: u8,
    /// Minor version; any value is accepted.
    pub minor: u8,
}

impl ProtocolVersion {
    /// RTPS 2.1 (sent by Cyclone DDS).
    pub const V2_1: Self = Self { major: 2, minor: 1 };
    /// RTPS 2.2.
    pub const V2_2: Self = Self { major: 2, minor: 2 };
    /// RTPS 2.3.
    pub const V2_3: Self = Self { major: 2, minor: 3 };
    /// RTPS 2.4.
    pub const V2_4: Self = Self { major: 2, minor: 4 };
    /// RTPS 2.5.
    pub const V2_5: Self = Self { major: 2, minor: 5 };
    /// The version FerroDDS puts in the headers it emits.
    pub const CURRENT: Self = Self::V2_5;
}

impl WireType for ProtocolVersion {
    #[inline]
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        let [major, minor] = r.array()?;
        Ok(Self { major, minor })
    }
    #[inline(always)]
    fn write(&self, w: &mut Writer<'_>) -> Result<()> {
        w.put(&[self.major, self.minor])
    }
}

/// Vendor id (§9.3.1.3, `VendorId_t`), two octets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VendorId(pub [u8; 2]);

impl VendorId {
    /// Unknown vendor (0x0000).
    pub const UNKNOWN: Self = Self([0x00, 0x00]);
    /// RTI Connext DDS.
    pub const RTI_CONNEXT: Self = Self([0x01, 0x01]);
    /// ADLINK OpenSplice DDS.
    pub const OPENSPLICE: Self = Self([0x01, 0x02]);
    /// OCI OpenDDS.
    pub const OPENDDS: Self = Self([0x01, 0x03]);
    /// MilSoft.
    pub const MILSOFT: Self = Self([0x01, 0x04]);
    /// Kongsberg InterCOM DDS.
    pub const INTERCOM: Self = Self([0x01, 0x05]);
    /// Twin Oaks CoreDX.
    pub const COREDX: Self = Self([0x01, 0x06]);
    /// Lakota Technical Solutions.
    pub const LAKOTA: Self = Self([0x01, 0x07]);
    /// ICOUP Consulting.
    pub const ICOUP: Self = Self([0x01, 0x08]);
    /// ETRI Diamond DDS.
    pub const DIAMOND: Self = Self([0x01, 0x09]);
    /// RTI Connext Micro.
    pub const RTI_CONNEXT_MICRO: Self = Self([0x01, 0x0a]);
    /// ADLINK Vortex Cafe.
    pub const VORTEX_CAFE: Self = Self([0x01, 0x0b]);
    /// PrismTech.
    pub const PRISMTECH: Self = Self([0x01, 0x0c]);
    /// ADLINK Vortex Lite.
    pub const VORTEX_LITE: Self = Self([0x01, 0x0d]);
    /// Technicolor Qeo.
    pub const QEO: Self = Self([0x01, 0x0e]);
    /// eProsima Fast DDS.
    pub const FAST_DDS: Self = Self([0x01, 0x0f]);
    /// Eclipse Cyclone DDS.
    pub const CYCLONE_DDS: Self = Self([0x01, 0x10]);
    /// GurumNetworks GurumDDS.
    pub const GURUMDDS: Self = Self([0x01, 0x11]);
    /// Atostek RustDDS.
    pub const RUSTDDS: Self = Self([0x01, 0x12]);
    /// ZRDDS.
    pub const ZRDDS: Self = Self([0x01, 0x13]);
    /// S2E Dust DDS.
    pub const DUST_DDS: Self = Self([0x01, 0x14]);
    /// FerroDDS. No id has been assigned by the OMG yet; `01 fd` is unassigned
    /// and not used by any known vendor (see protocol notes §1.7). Replace it
    /// once an official id is obtained.
    pub const FERRODDS: Self = Self([0x01, 0xfd]);
}

impl WireType for VendorId {
    #[inline]
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self(r.array()?))
    }
    #[inline(always)]
    fn write(&self, w: &mut Writer<'_>) -> Result<()> {
        w.put(&self.0)
    }
}

/// GUID prefix (§9.3.1.1, `GuidPrefix_t`): 12 octets identifying a participant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct GuidPrefix(pub [u8; 12]);

impl GuidPrefix {
    /// All zeros (`GUIDPREFIX_UNKNOWN`; in INFO_DST it means "all participants").
    pub const UNKNOWN: Self = Self([0; 12]);
}

impl WireType for GuidPrefix {
    #[inline]
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self(r.array()?))
    }
    #[inline(always)]
    fn write(&self, w: &mut Writer<'_>) -> Result<()> {
        w.put(&self.0)
    }
}

/// Entity id (§9.3.1.2, `EntityId_t`): 3-octet key plus 1-octet kind, copied as bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct EntityId(pub [u8; 4]);

impl EntityId {
    /// Kind: unknown.
    pub const KIND_UNKNOWN: u8 = 0x00;
    /// Kind: participant (always builtin, 0xc1 on the wire).
    pub const KIND_PARTICIPANT: u8 = 0x01;
    /// Kind: writer with key.
    pub const KIND_WRITER_WITH_KEY: u8 = 0x02;
    /// Kind: writer without key.
    pub const KIND_WRITER_NO_KEY: u8 = 0x03;
    /// Kind: reader without key.
    pub const KIND_READER_NO_KEY: u8 = 0x04;
    /// Kind: reader with key.
    pub const KIND_READER_WITH_KEY: u8 = 0x07;
    /// Kind: writer group.
    pub const KIND_WRITER_GROUP: u8 = 0x08;
    /// Kind: reader group.
    pub const KIND_READER_GROUP: u8 = 0x09;
    /// Kind modifier bits: builtin entity (0xc0).
    pub const KIND_BUILTIN: u8 = 0xc0;
    /// Kind modifier bits: vendor-specific entity (0x40).
    pub const KIND_VENDOR: u8 = 0x40;
    /// Kind modifier bits: user-defined entity (0x00).
    pub const KIND_USER: u8 = 0x00;

    /// `ENTITYID_UNKNOWN`.
    pub const UNKNOWN: Self = Self([0, 0, 0, 0]);
    /// `ENTITYID_PARTICIPANT`.
    pub const PARTICIPANT: Self = Self([0, 0, 0x01, 0xc1]);
    /// SEDP DCPSTopic writer.
    pub const SEDP_BUILTIN_TOPICS_ANNOUNCER: Self = Self([0, 0, 0x02, 0xc2]);
    /// SEDP DCPSTopic reader.
    pub const SEDP_BUILTIN_TOPICS_DETECTOR: Self = Self([0, 0, 0x02, 0xc7]);
    /// SEDP DCPSPublication writer.
    pub const SEDP_BUILTIN_PUBLICATIONS_ANNOUNCER: Self = Self([0, 0, 0x03, 0xc2]);
    /// SEDP DCPSPublication reader.
    pub const SEDP_BUILTIN_PUBLICATIONS_DETECTOR: Self = Self([0, 0, 0x03, 0xc7]);
    /// SEDP DCPSSubscription writer.
    pub const SEDP_BUILTIN_SUBSCRIPTIONS_ANNOUNCER: Self = Self([0, 0, 0x04, 0xc2]);
    /// SEDP DCPSSubscription reader.
    pub const SEDP_BUILTIN_SUBSCRIPTIONS_DETECTOR: Self = Self([0, 0, 0x04, 0xc7]);
    /// SPDP DCPSParticipant writer.
    pub const SPDP_BUILTIN_PARTICIPANT_ANNOUNCER: Self = Self([0, 0x01, 0x00, 0xc2]);
    /// SPDP DCPSParticipant reader.
    pub const SPDP_BUILTIN_PARTICIPANT_DETECTOR: Self = Self([0, 0x01, 0x00, 0xc7]);
    /// Participant-message (liveliness) writer.
    pub const P2P_BUILTIN_PARTICIPANT_MESSAGE_WRITER: Self = Self([0, 0x02, 0x00, 0xc2]);
    /// Participant-message (liveliness) reader.
    pub const P2P_BUILTIN_PARTICIPANT_MESSAGE_READER: Self = Self([0, 0x02, 0x00, 0xc7]);
    /// TypeLookup service request writer.
    pub const TYPELOOKUP_SERVICE_REQUEST_WRITER: Self = Self([0, 0x03, 0x00, 0xc3]);
    /// TypeLookup service request reader.
    pub const TYPELOOKUP_SERVICE_REQUEST_READER: Self = Self([0, 0x03, 0x00, 0xc4]);
    /// TypeLookup service reply writer.
    pub const TYPELOOKUP_SERVICE_REPLY_WRITER: Self = Self([0, 0x03, 0x01, 0xc3]);
    /// TypeLookup service reply reader.
    pub const TYPELOOKUP_SERVICE_REPLY_READER: Self = Self([0, 0x03, 0x01, 0xc4]);
    /// RTI service-request writer (vendor-specific, Connext).
    pub const RTI_SERVICE_REQUEST_WRITER: Self = Self([0, 0x02, 0x00, 0x82]);
    /// RTI service-request reader (vendor-specific, Connext).
    pub const RTI_SERVICE_REQUEST_READER: Self = Self([0, 0x02, 0x00, 0x87]);
    /// RTI locator-ping writer (vendor-specific, Connext).
    pub const RTI_LOCATOR_PING_WRITER: Self = Self([0, 0x02, 0x01, 0x82]);
    /// RTI locator-ping reader (vendor-specific, Connext).
    pub const RTI_LOCATOR_PING_READER: Self = Self([0, 0x02, 0x01, 0x87]);
    /// DDS-Security DCPSParticipantStatelessMessage writer.
    pub const PARTICIPANT_STATELESS_MESSAGE_WRITER: Self = Self([0, 0x02, 0x01, 0xc3]);
    /// DDS-Security DCPSParticipantStatelessMessage reader.
    pub const PARTICIPANT_STATELESS_MESSAGE_READER: Self = Self([0, 0x02, 0x01, 0xc4]);
    /// DDS-Security DCPSParticipantVolatileMessageSecure writer.
    pub const PARTICIPANT_VOLATILE_MESSAGE_SECURE_WRITER: Self = Self([0xff, 0x02, 0x02, 0xc3]);
    /// DDS-Security DCPSParticipantVolatileMessageSecure reader.
    pub const PARTICIPANT_VOLATILE_MESSAGE_SECURE_READER: Self = Self([0xff, 0x02, 0x02, 0xc4]);
    /// DDS-Security DCPSPublicationsSecure writer.
    pub const SEDP_BUILTIN_PUBLICATIONS_SECURE_WRITER: Self = Self([0xff, 0x00, 0x03, 0xc2]);
    /// DDS-Security DCPSPublicationsSecure reader.
    pub const SEDP_BUILTIN_PUBLICATIONS_SECURE_READER: Self = Self([0xff, 0x00, 0x03, 0xc7]);
    /// DDS-Security DCPSSubscriptionsSecure writer.
    pub const SEDP_BUILTIN_SUBSCRIPTIONS_SECURE_WRITER: Self = Self([0xff, 0x00, 0x04, 0xc2]);
    /// DDS-Security DCPSSubscriptionsSecure reader.
    pub const SEDP_BUILTIN_SUBSCRIPTIONS_SECURE_READER: Self = Self([0xff, 0x00, 0x04, 0xc7]);
    /// DDS-Security DCPSParticipantMessageSecure writer.
    pub const P2P_BUILTIN_PARTICIPANT_MESSAGE_SECURE_WRITER: Self = Self([0xff, 0x02, 0x00, 0xc2]);
    /// DDS-Security DCPSParticipantMessageSecure reader.
    pub const P2P_BUILTIN_PARTICIPANT_MESSAGE_SECURE_READER: Self = Self([0xff, 0x02, 0x00, 0xc7]);
    /// DDS-Security DCPSParticipantsSecure writer.
    pub const SPDP_RELIABLE_BUILTIN_PARTICIPANT_SECURE_WRITER: Self =
        Self([0xff, 0x01, 0x01, 0xc2]);
    /// DDS-Security DCPSParticipantsSecure reader.
    pub const SPDP_RELIABLE_BUILTIN_PARTICIPANT_SECURE_READER: Self =
        Self([0xff, 0x01, 0x01, 0xc7]);

    /// Builds an entity id from a 3-octet key and a kind octet.
    #[must_use]
    pub const fn new(key: [u8; 3], kind: u8) -> Self {
        Self([key[0], key[1], key[2], kind])
    }

    /// The 3-octet entity key.
    #[must_use]
    pub const fn key(self) -> [u8; 3] {
        [self.0[0], self.0[1], self.0[2]]
    }

    /// The kind octet.
    #[must_use]
    pub const fn kind(self) -> u8 {
        self.0[3]
    }

    /// The kind octet without the builtin/vendor modifier bits.
    #[must_use]
    pub const fn base_kind(self) -> u8 {
        self.0[3] & 0x3f
    }

    /// Builtin entity (kind bits 0xc0 both set).
    #[must_use]
    pub const fn is_builtin(self) -> bool {
        self.0[3] & 0xc0 == 0xc0
    }

    /// Vendor-specific entity (kind bits 0xc0 == 0x40).
    #[must_use]
    pub const fn is_vendor_specific(self) -> bool {
        self.0[3] & 0xc0 == 0x40
    }

    /// A writer (with or without key).
    #[must_use]
    pub const fn is_writer(self) -> bool {
        matches!(
            self.base_kind(),
            Self::KIND_WRITER_WITH_KEY | Self::KIND_WRITER_NO_KEY
        )
    }

    /// A reader (with or without key).
    #[must_use]
    pub const fn is_reader(self) -> bool {
        matches!(
            self.base_kind(),
            Self::KIND_READER_WITH_KEY | Self::KIND_READER_NO_KEY
        )
    }

    /// A keyed endpoint (writer or reader "with key"); Connext decides keyedness from this.
    #[must_use]
    pub const fn has_key(self) -> bool {
        matches!(
            self.base_kind(),
            Self::KIND_WRITER_WITH_KEY | Self::KIND_READER_WITH_KEY
        )
    }

    /// `ENTITYID_UNKNOWN`.
    #[must_use]
    pub const fn is_unknown(self) -> bool {
        matches!(self.0, [0, 0, 0, 0])
    }
}

impl WireType for EntityId {
    #[inline]
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self(r.array()?))
    }
    #[inline(always)]
    fn write(&self, w: &mut Writer<'_>) -> Result<()> {
        w.put(&self.0)
    }
}

/// Globally unique id of an entity (§9.3.1.5): prefix + entity id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Guid {
    /// Participant prefix.
    pub prefix: GuidPrefix,
    /// Entity within the participant.
    pub entity_id: EntityId,
}

impl Guid {
    /// `GUID_UNKNOWN`.
    pub const UNKNOWN: Self = Self {
        prefix: GuidPrefix::UNKNOWN,
        entity_id: EntityId::UNKNOWN,
    };

    /// Builds a GUID.
    #[must_use]
    pub const fn new(prefix: GuidPrefix, entity_id: EntityId) -> Self {
        Self { prefix, entity_id }
    }

    /// From the 16 wire octets.
    #[must_use]
    pub fn from_bytes(b: [u8; 16]) -> Self {
        let mut p = [0u8; 12];
        p.copy_from_slice(&b[..12]);
        Self {
            prefix: GuidPrefix(p),
            entity_id: EntityId([b[12], b[13], b[14], b[15]]),
        }
    }

    /// The 16 wire octets.
    #[must_use]
    pub fn to_bytes(self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..12].copy_from_slice(&self.prefix.0);
        b[12..].copy_from_slice(&self.entity_id.0);
        b
    }
}

impl WireType for Guid {
    #[inline]
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self::from_bytes(r.array()?))
    }
    #[inline(always)]
    fn write(&self, w: &mut Writer<'_>) -> Result<()> {
        w.put(&self.to_bytes())
    }
}

/// Sequence number (§9.3.2, `SequenceNumber_t`): on the wire a signed high
/// 32-bit word followed by an unsigned low word; the value is `high * 2^32 + low`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct SequenceNumber(pub i64);

impl SequenceNumber {
    /// `SEQUENCENUMBER_UNKNOWN` = {high -1, low 0}.
    pub const UNKNOWN: Self = Self(-1i64 << 32);
    /// Zero (not a valid writer SN; valid as "nothing yet" in HEARTBEAT lastSN).
    pub const ZERO: Self = Self(0);
    /// The first sequence number of every writer.
    pub const FIRST: Self = Self(1);

    /// From the two wire words.
    #[must_use]
    pub const fn from_high_low(high: i32, low: u32) -> Self {
        Self(((high as i64) << 32) | low as i64)
    }

    /// High wire word.
    #[must_use]
    pub const fn high(self) -> i32 {
        (self.0 >> 32) as i32
    }

    /// Low wire word.
    #[must_use]
    pub const fn low(self) -> u32 {
        self.0 as u32
    }

    /// The next sequence number (saturating).
    #[must_use]
    pub const fn next(self) -> Self {
        Self(self.0.saturating_add(1))
    }

    /// A valid writer sequence number (>= 1).
    #[must_use]
    pub const fn is_valid(self) -> bool {
        self.0 >= 1
    }
}

impl WireType for SequenceNumber {
    #[inline]
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        let high = r.i32()?;
        let low = r.u32()?;
        Ok(Self::from_high_low(high, low))
    }
    #[inline(always)]
    fn write(&self, w: &mut Writer<'_>) -> Result<()> {
        w.i32(self.high())?;
        w.u32(self.low())
    }
}

/// Fragment number (§9.3.2, `FragmentNumber_t`), 1-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct FragmentNumber(pub u32);

impl WireType for FragmentNumber {
    #[inline]
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self(r.u32()?))
    }
    #[inline(always)]
    fn write(&self, w: &mut Writer<'_>) -> Result<()> {
        w.u32(self.0)
    }
}

/// Count of HEARTBEAT/ACKNACK/NACK_FRAG/HEARTBEAT_FRAG submessages (§9.3.2, `Count_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Count(pub i32);

impl WireType for Count {
    #[inline]
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self(r.i32()?))
    }
    #[inline(always)]
    fn write(&self, w: &mut Writer<'_>) -> Result<()> {
        w.i32(self.0)
    }
}

/// Maximum `numBits` of a sequence-number or fragment-number set.
pub const MAX_SET_BITS: u32 = 256;

/// Fixed 256-bit bitmap shared by the two set types. Bit `i` is bit `31 - i % 32`
/// of word `i / 32` (MSB of word 0 = the base).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Bitmap {
    num_bits: u32,
    words: [u32; 8],
}

impl Bitmap {
    const EMPTY: Self = Self {
        num_bits: 0,
        words: [0; 8],
    };

    fn from_parts(num_bits: u32, words: [u32; 8]) -> Option<Self> {
        if num_bits > MAX_SET_BITS {
            return None;
        }
        let mut b = Self { num_bits, words };
        let used = Self::words_for(num_bits);
        for w in b.words.iter_mut().skip(used) {
            *w = 0;
        }
        Some(b)
    }

    const fn words_for(num_bits: u32) -> usize {
        num_bits.div_ceil(32) as usize
    }

    fn used_words(&self) -> &[u32] {
        self.words
            .get(..Self::words_for(self.num_bits))
            .unwrap_or(&self.words)
    }

    fn get(&self, idx: u32) -> bool {
        idx < self.num_bits
            && self
                .words
                .get((idx / 32) as usize)
                .is_some_and(|w| w & (0x8000_0000 >> (idx % 32)) != 0)
    }

    fn set(&mut self, idx: u32) -> bool {
        if idx >= MAX_SET_BITS {
            return false;
        }
        if let Some(w) = self.words.get_mut((idx / 32) as usize) {
            *w |= 0x8000_0000 >> (idx % 32);
        }
        self.num_bits = self.num_bits.max(idx + 1);
        true
    }

    fn next_set(&self, from: u32) -> Option<u32> {
        (from..self.num_bits).find(|&i| self.get(i))
    }

    #[inline]
    fn read(r: &mut Reader<'_>, offset: usize) -> Result<Self> {
        let num_bits = r.u32()?;
        if num_bits > MAX_SET_BITS {
            return Err(WireError::InvalidNumBits { offset, num_bits });
        }
        let mut words = [0u32; 8];
        for w in words.iter_mut().take(Self::words_for(num_bits)) {
            *w = r.u32()?;
        }
        Ok(Self { num_bits, words })
    }

    #[inline(always)]
    fn write(&self, w: &mut Writer<'_>) -> Result<()> {
        w.u32(self.num_bits)?;
        for &word in self.used_words() {
            w.u32(word)?;
        }
        Ok(())
    }

    fn encoded_len(&self) -> usize {
        4 + 4 * Self::words_for(self.num_bits)
    }
}

/// Set of sequence numbers `base .. base + numBits` (§9.4.2.6,
/// `SequenceNumberSet`), stored in a fixed 256-bit bitmap (no allocation).
///
/// Parsing accepts base 0 only with `numBits == 0` (pre-emptive ACKNACKs of
/// Fast DDS, Connext and CoreDX); emitting refuses a base below 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SequenceNumberSet {
    base: SequenceNumber,
    bits: Bitmap,
}

impl SequenceNumberSet {
    /// An empty set with the given base (`numBits` 0).
    #[must_use]
    pub const fn empty(base: SequenceNumber) -> Self {
        Self {
            base,
            bits: Bitmap::EMPTY,
        }
    }

    /// Builds a set from its wire parts; `None` if `num_bits > 256`. Words beyond
    /// `ceil(num_bits / 32)` are cleared.
    #[must_use]
    pub fn from_parts(base: SequenceNumber, num_bits: u32, bitmap: [u32; 8]) -> Option<Self> {
        Bitmap::from_parts(num_bits, bitmap).map(|bits| Self { base, bits })
    }

    /// The bitmap base (first SN the set can describe).
    #[must_use]
    pub const fn base(&self) -> SequenceNumber {
        self.base
    }

    /// `numBits`.
    #[must_use]
    pub const fn num_bits(&self) -> u32 {
        self.bits.num_bits
    }

    /// The raw bitmap words (only `ceil(num_bits/32)` are meaningful).
    #[must_use]
    pub const fn bitmap(&self) -> &[u32; 8] {
        &self.bits.words
    }

    /// Adds `sn`; returns false (and leaves the set unchanged) if `sn` is outside
    /// `base .. base + 256`. Grows `numBits` as needed.
    pub fn insert(&mut self, sn: SequenceNumber) -> bool {
        match sn.0.checked_sub(self.base.0) {
            Some(d) if (0..i64::from(MAX_SET_BITS)).contains(&d) => self.bits.set(d as u32),
            _ => false,
        }
    }

    /// Whether `sn` is in the set.
    #[must_use]
    pub fn contains(&self, sn: SequenceNumber) -> bool {
        match sn.0.checked_sub(self.base.0) {
            Some(d) if (0..i64::from(MAX_SET_BITS)).contains(&d) => self.bits.get(d as u32),
            _ => false,
        }
    }

    /// Whether no SN is set.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.iter().next().is_none()
    }

    /// The set sequence numbers in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = SequenceNumber> + '_ {
        let mut next = 0u32;
        core::iter::from_fn(move || {
            let i = self.bits.next_set(next)?;
            next = i + 1;
            Some(SequenceNumber(self.base.0.saturating_add(i64::from(i))))
        })
    }

    /// Encoded size in bytes.
    #[must_use]
    pub fn encoded_len(&self) -> usize {
        8 + self.bits.encoded_len()
    }

    pub(crate) fn read(r: &mut Reader<'_>) -> Result<Self> {
        let offset = r.offset();
        let base = SequenceNumber::read(r)?;
        let bits = Bitmap::read(r, offset)?;
        if base.0 < 1 && !(base.0 == 0 && bits.num_bits == 0) {
            return Err(WireError::InvalidSequenceNumber { offset });
        }
        Ok(Self { base, bits })
    }

    pub(crate) fn write(&self, w: &mut Writer<'_>) -> Result<()> {
        if self.base.0 < 1 {
            return Err(WireError::Unencodable {
                what: "sequence number set base below 1",
            });
        }
        self.base.write(w)?;
        self.bits.write(w)
    }
}

/// Set of fragment numbers `base .. base + numBits` (§9.4.2.8,
/// `FragmentNumberSet`), stored in a fixed 256-bit bitmap.
///
/// Parsing accepts base 0 only with `numBits == 0`; emitting refuses base 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FragmentNumberSet {
    base: FragmentNumber,
    bits: Bitmap,
}

impl FragmentNumberSet {
    /// An empty set with the given base.
    #[must_use]
    pub const fn empty(base: FragmentNumber) -> Self {
        Self {
            base,
            bits: Bitmap::EMPTY,
        }
    }

    /// Builds a set from its wire parts; `None` if `num_bits > 256`.
    #[must_use]
    pub fn from_parts(base: FragmentNumber, num_bits: u32, bitmap: [u32; 8]) -> Option<Self> {
        Bitmap::from_parts(num_bits, bitmap).map(|bits| Self { base, bits })
    }

    /// The bitmap base.
    #[must_use]
    pub const fn base(&self) -> FragmentNumber {
        self.base
    }

    /// `numBits`.
    #[must_use]
    pub const fn num_bits(&self) -> u32 {
        self.bits.num_bits
    }

    /// The raw bitmap words.
    #[must_use]
    pub const fn bitmap(&self) -> &[u32; 8] {
        &self.bits.words
    }

    /// Adds `n`; false if outside `base .. base + 256`.
    pub fn insert(&mut self, n: FragmentNumber) -> bool {
        match n.0.checked_sub(self.base.0) {
            Some(d) if d < MAX_SET_BITS => self.bits.set(d),
            _ => false,
        }
    }

    /// Whether `n` is in the set.
    #[must_use]
    pub fn contains(&self, n: FragmentNumber) -> bool {
        match n.0.checked_sub(self.base.0) {
            Some(d) if d < MAX_SET_BITS => self.bits.get(d),
            _ => false,
        }
    }

    /// Whether no fragment is set.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.iter().next().is_none()
    }

    /// The set fragment numbers in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = FragmentNumber> + '_ {
        let mut next = 0u32;
        core::iter::from_fn(move || {
            let i = self.bits.next_set(next)?;
            next = i + 1;
            Some(FragmentNumber(self.base.0.saturating_add(i)))
        })
    }

    /// Encoded size in bytes.
    #[must_use]
    pub fn encoded_len(&self) -> usize {
        4 + self.bits.encoded_len()
    }

    pub(crate) fn read(r: &mut Reader<'_>) -> Result<Self> {
        let offset = r.offset();
        let base = FragmentNumber::read(r)?;
        let bits = Bitmap::read(r, offset)?;
        if base.0 == 0 && bits.num_bits != 0 {
            return Err(WireError::InvalidFragment { offset });
        }
        Ok(Self { base, bits })
    }

    pub(crate) fn write(&self, w: &mut Writer<'_>) -> Result<()> {
        if self.base.0 == 0 {
            return Err(WireError::Unencodable {
                what: "fragment number set base 0",
            });
        }
        self.base.write(w)?;
        self.bits.write(w)
    }
}

/// Transport locator (§9.3.2, `Locator_t`): kind, port, 16-octet address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Locator {
    /// Locator kind (see the `KIND_*` constants; unknown kinds must be ignored by consumers).
    pub kind: i32,
    /// Port.
    pub port: u32,
    /// Address; IPv4 addresses occupy the last 4 octets.
    pub address: [u8; 16],
}

impl Locator {
    /// `LOCATOR_KIND_INVALID`.
    pub const KIND_INVALID: i32 = -1;
    /// `LOCATOR_KIND_RESERVED`.
    pub const KIND_RESERVED: i32 = 0;
    /// `LOCATOR_KIND_UDPv4`.
    pub const KIND_UDPV4: i32 = 1;
    /// `LOCATOR_KIND_UDPv6`.
    pub const KIND_UDPV6: i32 = 2;
    /// TCPv4 (Fast DDS, Cyclone DDS).
    pub const KIND_TCPV4: i32 = 4;
    /// TCPv6 (Fast DDS, Cyclone DDS).
    pub const KIND_TCPV6: i32 = 8;
    /// Cyclone PSMX shared memory.
    pub const KIND_CYCLONE_PSMX: i32 = 16;
    /// RTI shared memory.
    pub const KIND_RTI_SHMEM: i32 = 0x0100_0000;
    /// RTI UDPv4 WAN.
    pub const KIND_RTI_UDPV4_WAN: i32 = 0x0100_0001;
    /// FerroDDS TLS over TCPv4 (Cyclone DDS's TCP framing inside TLS; vendor-specific).
    pub const KIND_FERRODDS_TLSV4: i32 = 0x0fdd_0004;
    /// FerroDDS shared memory (vendor-specific): the first twelve address octets identify the
    /// host (and its boot), the last four are 127.0.0.1, and the port names the receiving
    /// participant's segment.
    pub const KIND_FERRODDS_SHM: i32 = 0x0fdd_0005;
    /// `LOCATOR_PORT_INVALID`.
    pub const PORT_INVALID: u32 = 0;
    /// `LOCATOR_INVALID`.
    pub const INVALID: Self = Self {
        kind: Self::KIND_INVALID,
        port: Self::PORT_INVALID,
        address: [0; 16],
    };
    /// Encoded size in bytes.
    pub const SIZE: usize = 24;

    /// A UDPv4 locator.
    #[must_use]
    pub fn udpv4(addr: Ipv4Addr, port: u16) -> Self {
        Self::with_ipv4(Self::KIND_UDPV4, addr, u32::from(port))
    }

    /// A locator of any kind with an IPv4 address in the last four octets.
    #[must_use]
    pub fn with_ipv4(kind: i32, addr: Ipv4Addr, port: u32) -> Self {
        let mut address = [0u8; 16];
        address[12..].copy_from_slice(&addr.octets());
        Self {
            kind,
            port,
            address,
        }
    }

    /// A FerroDDS shared-memory locator: `host` in the first twelve address octets,
    /// 127.0.0.1 in the last four, `id` (the receiving participant's segment) as the port.
    #[must_use]
    pub fn shm(host: [u8; 12], id: u16) -> Self {
        let mut l = Self::with_ipv4(Self::KIND_FERRODDS_SHM, Ipv4Addr::LOCALHOST, u32::from(id));
        l.address[..12].copy_from_slice(&host);
        l
    }

    /// The host identity of a FerroDDS shared-memory locator (its first twelve octets).
    #[must_use]
    pub fn shm_host(&self) -> Option<[u8; 12]> {
        if self.kind != Self::KIND_FERRODDS_SHM {
            return None;
        }
        let mut h = [0u8; 12];
        h.copy_from_slice(&self.address[..12]);
        Some(h)
    }

    /// A UDPv6 locator.
    #[must_use]
    pub fn udpv6(addr: Ipv6Addr, port: u16) -> Self {
        Self {
            kind: Self::KIND_UDPV6,
            port: u32::from(port),
            address: addr.octets(),
        }
    }

    /// The IPv4 address of a UDPv4/TCPv4 locator.
    #[must_use]
    pub fn ipv4(&self) -> Option<Ipv4Addr> {
        match self.kind {
            Self::KIND_UDPV4
            | Self::KIND_TCPV4
            | Self::KIND_FERRODDS_TLSV4
            | Self::KIND_FERRODDS_SHM => Some(Ipv4Addr::new(
                self.address[12],
                self.address[13],
                self.address[14],
                self.address[15],
            )),
            _ => None,
        }
    }

    /// The IPv6 address of a UDPv6/TCPv6 locator.
    #[must_use]
    pub fn ipv6(&self) -> Option<Ipv6Addr> {
        match self.kind {
            Self::KIND_UDPV6 | Self::KIND_TCPV6 => Some(Ipv6Addr::from(self.address)),
            _ => None,
        }
    }

    /// The socket address of a UDPv4/UDPv6 locator whose port fits 16 bits.
    #[must_use]
    pub fn udp_socket_addr(&self) -> Option<SocketAddr> {
        let port = u16::try_from(self.port).ok()?;
        let ip = match self.kind {
            Self::KIND_UDPV4 => IpAddr::V4(self.ipv4()?),
            Self::KIND_UDPV6 => IpAddr::V6(self.ipv6()?),
            _ => return None,
        };
        Some(SocketAddr::new(ip, port))
    }

    /// The destination socket address of a UDPv4 locator: `None` for other
    /// kinds and for ports that are invalid (0) or do not fit 16 bits.
    #[must_use]
    pub fn udpv4_destination(&self) -> Option<SocketAddrV4> {
        if self.kind != Self::KIND_UDPV4 {
            return None;
        }
        self.ipv4_destination()
    }

    /// The destination socket address of a UDPv4, TCPv4, TLSv4 or FerroDDS shared-memory
    /// locator (127.0.0.1 and the segment's id): `None` for other kinds and for ports that are
    /// invalid (0) or do not fit 16 bits.
    #[must_use]
    pub fn ipv4_destination(&self) -> Option<SocketAddrV4> {
        if !matches!(
            self.kind,
            Self::KIND_UDPV4
                | Self::KIND_TCPV4
                | Self::KIND_FERRODDS_TLSV4
                | Self::KIND_FERRODDS_SHM
        ) {
            return None;
        }
        let port = u16::try_from(self.port).ok().filter(|p| *p != 0)?;
        Some(SocketAddrV4::new(self.ipv4()?, port))
    }

    /// A UDP locator for a socket address.
    #[must_use]
    pub fn from_udp_socket_addr(addr: SocketAddr) -> Self {
        match addr {
            SocketAddr::V4(a) => Self::udpv4(*a.ip(), a.port()),
            SocketAddr::V6(a) => Self::udpv6(*a.ip(), a.port()),
        }
    }
}

impl WireType for Locator {
    #[inline]
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        let kind = r.i32()?;
        let port = r.u32()?;
        let address = r.array()?;
        Ok(Self {
            kind,
            port,
            address,
        })
    }
    #[inline(always)]
    fn write(&self, w: &mut Writer<'_>) -> Result<()> {
        w.i32(self.kind)?;
        w.u32(self.port)?;
        w.put(&self.address)
    }
}

#[derive(Debug, Clone, Copy)]
enum LocatorListRepr<'a> {
    Wire {
        bytes: &'a [u8],
        endian: crate::Endianness,
    },
    Slice(&'a [Locator]),
}

/// A borrowed list of locators (`LocatorList_t`, §9.4.2.11): either a validated
/// view of wire bytes (as parsed from INFO_REPLY) or a slice of [`Locator`]s
/// to emit. Iterating never allocates.
#[derive(Debug, Clone, Copy)]
pub struct LocatorList<'a> {
    repr: LocatorListRepr<'a>,
}

impl<'a> LocatorList<'a> {
    /// A list to emit from a slice.
    #[must_use]
    pub const fn from_slice(locators: &'a [Locator]) -> Self {
        Self {
            repr: LocatorListRepr::Slice(locators),
        }
    }

    /// Number of locators.
    #[must_use]
    pub fn len(&self) -> usize {
        match self.repr {
            LocatorListRepr::Wire { bytes, .. } => bytes.len() / Locator::SIZE,
            LocatorListRepr::Slice(s) => s.len(),
        }
    }

    /// Whether the list is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The locators in order.
    pub fn iter(&self) -> impl Iterator<Item = Locator> + 'a {
        let (bytes, endian, slice): (&'a [u8], _, &'a [Locator]) = match self.repr {
            LocatorListRepr::Wire { bytes, endian } => (bytes, endian, &[]),
            LocatorListRepr::Slice(s) => (&[], crate::Endianness::Big, s),
        };
        let wire = bytes.chunks_exact(Locator::SIZE).filter_map(move |c| {
            let mut r = Reader::new(c, 0, endian);
            Locator::read(&mut r).ok()
        });
        slice.iter().copied().chain(wire)
    }

    /// Encoded size (count + locators).
    #[must_use]
    pub fn encoded_len(&self) -> usize {
        4 + Locator::SIZE * self.len()
    }

    pub(crate) fn read(r: &mut Reader<'a>) -> Result<Self> {
        let offset = r.offset();
        let n = r.u32()?;
        let have = r.remaining();
        let needed = (n as usize).checked_mul(Locator::SIZE);
        let bytes = match needed {
            Some(needed) if needed <= have => r.take(needed)?,
            _ => {
                return Err(WireError::Truncated {
                    offset,
                    needed: needed.unwrap_or(usize::MAX),
                    have,
                })
            }
        };
        Ok(Self {
            repr: LocatorListRepr::Wire {
                bytes,
                endian: r.endian,
            },
        })
    }

    pub(crate) fn write(&self, w: &mut Writer<'_>) -> Result<()> {
        let n = u32::try_from(self.len()).map_err(|_| WireError::TooLong {
            length: self.len(),
            max: u32::MAX as usize,
        })?;
        w.u32(n)?;
        match self.repr {
            LocatorListRepr::Wire { bytes, endian } if endian == w.endian => w.put(bytes),
            _ => {
                for l in self.iter() {
                    l.write(w)?;
                }
                Ok(())
            }
        }
    }
}

impl PartialEq for LocatorList<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for LocatorList<'_> {}

const NANOS_PER_SEC: i64 = 1_000_000_000;

fn frac_from_nanos(rem: u64) -> u32 {
    // ceil(rem * 2^32 / 1e9): makes nanos -> fraction -> nanos exact.
    let v = (rem << 32).div_ceil(NANOS_PER_SEC as u64);
    u32::try_from(v).unwrap_or(u32::MAX)
}

fn nanos_from_frac(frac: u32) -> i64 {
    ((u64::from(frac) * NANOS_PER_SEC as u64) >> 32) as i64
}

fn split_nanos(nanos: i64) -> (i32, u32) {
    let secs = nanos.div_euclid(NANOS_PER_SEC);
    let rem = nanos.rem_euclid(NANOS_PER_SEC) as u64;
    match i32::try_from(secs) {
        Ok(s) => (s, frac_from_nanos(rem)),
        Err(_) if secs < 0 => (i32::MIN, 0),
        Err(_) => (i32::MAX, u32::MAX),
    }
}

/// Timestamp (§9.3.2, `Time_t`): seconds plus a binary fraction (2^-32 s).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Time {
    /// Whole seconds since the epoch.
    pub seconds: i32,
    /// Fraction of a second in units of 2^-32 s.
    pub fraction: u32,
}

impl Time {
    /// `TIME_ZERO`.
    pub const ZERO: Self = Self {
        seconds: 0,
        fraction: 0,
    };
    /// `TIME_INVALID` = {-1, 0xffffffff}.
    pub const INVALID: Self = Self {
        seconds: -1,
        fraction: 0xffff_ffff,
    };
    /// `TIME_INFINITE` = {0x7fffffff, 0xffffffff}.
    pub const INFINITE: Self = Self {
        seconds: 0x7fff_ffff,
        fraction: 0xffff_ffff,
    };

    /// From nanoseconds since the epoch (saturating); exact for `to_nanos`.
    #[must_use]
    pub fn from_nanos(nanos: i64) -> Self {
        let (seconds, fraction) = split_nanos(nanos);
        Self { seconds, fraction }
    }

    /// Nanoseconds since the epoch (fraction rounded down).
    #[must_use]
    pub fn to_nanos(self) -> i64 {
        i64::from(self.seconds) * NANOS_PER_SEC + nanos_from_frac(self.fraction)
    }
}

impl WireType for Time {
    #[inline]
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        let seconds = r.i32()?;
        let fraction = r.u32()?;
        Ok(Self { seconds, fraction })
    }
    #[inline(always)]
    fn write(&self, w: &mut Writer<'_>) -> Result<()> {
        w.i32(self.seconds)?;
        w.u32(self.fraction)
    }
}

/// Duration (`Duration_t`): same wire form as [`Time`] (seconds + 2^-32 s fraction).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Duration {
    /// Whole seconds.
    pub seconds: i32,
    /// Fraction of a second in units of 2^-32 s.
    pub fraction: u32,
}

impl Duration {
    /// Zero.
    pub const ZERO: Self = Self {
        seconds: 0,
        fraction: 0,
    };
    /// `DURATION_INFINITE` = {0x7fffffff, 0xffffffff}.
    pub const INFINITE: Self = Self {
        seconds: 0x7fff_ffff,
        fraction: 0xffff_ffff,
    };

    /// From nanoseconds (saturating; values beyond the range give INFINITE).
    #[must_use]
    pub fn from_nanos(nanos: i64) -> Self {
        let (seconds, fraction) = split_nanos(nanos);
        Self { seconds, fraction }
    }

    /// Nanoseconds (fraction rounded down).
    #[must_use]
    pub fn to_nanos(self) -> i64 {
        i64::from(self.seconds) * NANOS_PER_SEC + nanos_from_frac(self.fraction)
    }

    /// Whether this is `DURATION_INFINITE`.
    #[must_use]
    pub fn is_infinite(self) -> bool {
        self == Self::INFINITE
    }

    /// From a `core::time::Duration` (saturating to INFINITE).
    #[must_use]
    pub fn from_std(d: core::time::Duration) -> Self {
        match i32::try_from(d.as_secs()) {
            Ok(seconds) if seconds < i32::MAX => Self {
                seconds,
                fraction: frac_from_nanos(u64::from(d.subsec_nanos())),
            },
            _ => Self::INFINITE,
        }
    }

    /// To a `core::time::Duration`; `None` for INFINITE or negative durations.
    #[must_use]
    pub fn to_std(self) -> Option<core::time::Duration> {
        if self.is_infinite() || self.seconds < 0 {
            return None;
        }
        Some(core::time::Duration::new(
            self.seconds as u64,
            nanos_from_frac(self.fraction) as u32,
        ))
    }
}

impl From<core::time::Duration> for Duration {
    fn from(d: core::time::Duration) -> Self {
        Self::from_std(d)
    }
}

impl WireType for Duration {
    #[inline]
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        let seconds = r.i32()?;
        let fraction = r.u32()?;
        Ok(Self { seconds, fraction })
    }
    #[inline(always)]
    fn write(&self, w: &mut Writer<'_>) -> Result<()> {
        w.i32(self.seconds)?;
        w.u32(self.fraction)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Endianness;

    #[test]
    fn shared_memory_locators_carry_host_and_segment() {
        let host = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12];
        let l = Locator::shm(host, 7411);
        assert_eq!(l.kind, Locator::KIND_FERRODDS_SHM);
        assert_eq!(l.shm_host(), Some(host));
        assert_eq!(&l.address[12..], &[127, 0, 0, 1]);
        assert_eq!(
            l.ipv4_destination(),
            Some(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 7411))
        );
        assert_eq!(l.udpv4_destination(), None);
        assert_eq!(Locator::udpv4(Ipv4Addr::LOCALHOST, 1).shm_host(), None);
    }

    #[test]
    fn udpv4_destination_filters_kinds_and_ports() {
        let l = Locator::udpv4(Ipv4Addr::new(127, 0, 0, 1), 7410);
        assert_eq!(
            l.udpv4_destination(),
            Some(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 7410))
        );
        let mut v6 = l;
        v6.kind = Locator::KIND_UDPV6;
        assert_eq!(v6.udpv4_destination(), None);
        let mut tcp = l;
        tcp.kind = Locator::KIND_TCPV4;
        assert_eq!(tcp.udpv4_destination(), None);
        let mut big = l;
        big.port = 70_000;
        assert_eq!(big.udpv4_destination(), None);
        let mut zero = l;
        zero.port = Locator::PORT_INVALID;
        assert_eq!(zero.udpv4_destination(), None);
    }

    #[test]
    fn sequence_number_words() {
        assert_eq!(SequenceNumber::UNKNOWN.high(), -1);
        assert_eq!(SequenceNumber::UNKNOWN.low(), 0);
        let sn = SequenceNumber::from_high_low(1, 5);
        assert_eq!(sn.0, (1i64 << 32) + 5);
        assert_eq!(SequenceNumber::from_high_low(sn.high(), sn.low()), sn);
        let mut buf = [0u8; 8];
        let mut w = Writer::new(&mut buf, Endianness::Little);
        sn.write(&mut w).unwrap();
        // high = 1 (LE), low = 5 (LE)
        assert_eq!(buf, [1, 0, 0, 0, 5, 0, 0, 0]);
    }

    #[test]
    fn sn_set_insert_contains_iter() {
        let mut s = SequenceNumberSet::empty(SequenceNumber(10));
        assert!(s.is_empty());
        assert!(s.insert(SequenceNumber(10)));
        assert!(s.insert(SequenceNumber(42)));
        assert!(s.insert(SequenceNumber(265)));
        assert!(!s.insert(SequenceNumber(266)));
        assert!(!s.insert(SequenceNumber(9)));
        assert_eq!(s.num_bits(), 256);
        assert!(s.contains(SequenceNumber(42)));
        assert!(!s.contains(SequenceNumber(43)));
        let v: [SequenceNumber; 3] = {
            let mut it = s.iter();
            [it.next().unwrap(), it.next().unwrap(), it.next().unwrap()]
        };
        assert_eq!(
            v,
            [SequenceNumber(10), SequenceNumber(42), SequenceNumber(265)]
        );
        assert_eq!(s.iter().count(), 3);
        assert_eq!(s.bitmap()[0], 0x8000_0000);
        assert_eq!(s.bitmap()[1], 0x8000_0000);
        assert_eq!(s.bitmap()[7], 0x0000_0001);
    }

    #[test]
    fn sn_set_parse_rules() {
        // base 0, numBits 0: accepted (pre-emptive ACKNACK from some vendors)
        let bytes = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        let s = SequenceNumberSet::read(&mut Reader::new(&bytes, 0, Endianness::Big)).unwrap();
        assert_eq!(s.base(), SequenceNumber(0));
        // but never emitted
        let mut out = [0u8; 12];
        assert!(matches!(
            s.write(&mut Writer::new(&mut out, Endianness::Big)),
            Err(WireError::Unencodable { .. })
        ));
        // base 0, numBits 1: rejected
        let bytes = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0x80, 0, 0, 0];
        assert_eq!(
            SequenceNumberSet::read(&mut Reader::new(&bytes, 4, Endianness::Big)),
            Err(WireError::InvalidSequenceNumber { offset: 4 })
        );
        // numBits 257: rejected
        let bytes = [0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0x01, 0x01];
        assert_eq!(
            SequenceNumberSet::read(&mut Reader::new(&bytes, 0, Endianness::Big)),
            Err(WireError::InvalidNumBits {
                offset: 0,
                num_bits: 257
            })
        );
    }

    #[test]
    fn fragment_set_basics() {
        let mut s = FragmentNumberSet::empty(FragmentNumber(1));
        assert!(s.insert(FragmentNumber(3)));
        assert!(!s.insert(FragmentNumber(0)));
        assert!(s.contains(FragmentNumber(3)));
        assert_eq!(s.num_bits(), 3);
        assert_eq!(s.bitmap()[0], 0x2000_0000);
        assert_eq!(s.encoded_len(), 12);
    }

    #[test]
    fn time_conversions() {
        for ns in [
            0i64,
            1,
            999_999_999,
            1_000_000_000,
            1_234_567_891,
            -1,
            -1_500_000_000,
        ] {
            assert_eq!(Time::from_nanos(ns).to_nanos(), ns, "{ns}");
        }
        assert_eq!(
            Time::from_nanos(1_500_000_000),
            Time {
                seconds: 1,
                fraction: 0x8000_0000
            }
        );
        let d = Duration::from_std(core::time::Duration::from_millis(250));
        assert_eq!(d.fraction, 0x4000_0000);
        assert_eq!(d.to_std(), Some(core::time::Duration::from_millis(250)));
        assert_eq!(Duration::INFINITE.to_std(), None);
        assert_eq!(
            Duration::from_std(core::time::Duration::from_secs(u64::MAX)),
            Duration::INFINITE
        );
    }

    #[test]
    fn locator_helpers() {
        let l = Locator::udpv4(Ipv4Addr::new(127, 0, 0, 1), 7400);
        assert_eq!(l.address[12..], [127, 0, 0, 1]);
        assert_eq!(l.ipv4(), Some(Ipv4Addr::LOCALHOST));
        assert_eq!(
            l.udp_socket_addr(),
            Some(SocketAddr::from(([127, 0, 0, 1], 7400)))
        );
        assert_eq!(
            Locator::from_udp_socket_addr(l.udp_socket_addr().unwrap()),
            l
        );
        assert_eq!(Locator::INVALID.udp_socket_addr(), None);
    }

    #[test]
    fn entity_kinds() {
        assert!(EntityId::SPDP_BUILTIN_PARTICIPANT_ANNOUNCER.is_builtin());
        assert!(EntityId::SPDP_BUILTIN_PARTICIPANT_ANNOUNCER.is_writer());
        assert!(EntityId::SPDP_BUILTIN_PARTICIPANT_ANNOUNCER.has_key());
        assert!(EntityId::TYPELOOKUP_SERVICE_REQUEST_READER.is_reader());
        assert!(!EntityId::TYPELOOKUP_SERVICE_REQUEST_READER.has_key());
        assert!(EntityId::RTI_SERVICE_REQUEST_WRITER.is_writer());
        assert!(!EntityId::RTI_SERVICE_REQUEST_WRITER.is_builtin());
        let user = EntityId::new([0, 0, 1], EntityId::KIND_WRITER_NO_KEY);
        assert!(user.is_writer() && !user.has_key() && !user.is_builtin());
        assert!(EntityId::UNKNOWN.is_unknown());
        let g = Guid::new(GuidPrefix([1; 12]), EntityId::PARTICIPANT);
        assert_eq!(Guid::from_bytes(g.to_bytes()), g);
    }
}
