//! Building DATA / DATA_FRAG submessages of a cache change into a datagram.

use super::*;

/// What [`emit_change`] managed to put into a datagram.
pub(super) enum Emitted {
    /// The whole change (or its remaining fragments).
    All,
    /// Fragments up to (excluding) this 1-based fragment number.
    Upto(u32),
    /// Nothing fitted.
    Nothing,
}

/// Emits a change as DATA, or as DATA_FRAGs from fragment `from` on when it is
/// larger than `sizes.max_data`. A DATA keeps `reserve` bytes free; fragments
/// fill the datagram (a fragment fills one alone).
pub(super) fn emit_change(
    e: &mut Emitter<'_>,
    ids: (EntityId, EntityId),
    c: &CacheChange,
    sizes: Sizes,
    from: u32,
    reserve: usize,
    stats: &mut Stats,
) -> Emitted {
    let (reader_id, writer_id) = ids;
    let key_only = c.kind != ChangeKind::Alive;
    let payload: &[u8] = &c.payload;
    if sizes.refs && from <= 1 {
        if let Some(reference) = c.payload.reference() {
            return emit_ref(e, ids, c, reference, reserve, stats);
        }
    }
    if payload.len() <= sizes.max_data {
        let need = Emitter::data_len(c.key_hash.is_some(), key_only, payload.len())
            + e.info_ts_len(c.source_timestamp);
        if need + reserve > e.room() {
            return Emitted::Nothing;
        }
        let written = if c.key_hash.is_none() && c.kind == ChangeKind::Alive && e.unprotected() {
            e.timed_data(c.source_timestamp, reader_id, writer_id, c.sn, payload)
        } else {
            e.info_ts(c.source_timestamp)
                && e.data(
                    reader_id,
                    writer_id,
                    c.sn,
                    c.key_hash.as_ref(),
                    c.kind.status_info(),
                    payload,
                    key_only,
                )
        };
        if !written {
            // (The room was checked: not reached unless a length overflows its field.)
            return Emitted::Nothing;
        }
        stats.sent_data += 1;
        return Emitted::All;
    }
    let total = payload.len().div_ceil(sizes.frag) as u32;
    let mut f = from.max(1);
    while f <= total {
        if !emit_fragment(e, ids, c, sizes, f, 0) {
            break;
        }
        stats.sent_data += 1;
        f += 1;
    }
    if f > total {
        Emitted::All
    } else if f > from.max(1) {
        Emitted::Upto(f)
    } else {
        Emitted::Nothing
    }
}

/// Emits `c`, whose payload is in shared memory, as a DATA_REF naming it.
#[cold]
#[inline(never)]
fn emit_ref(
    e: &mut Emitter<'_>,
    (reader_id, writer_id): (EntityId, EntityId),
    c: &CacheChange,
    reference: &[u8],
    reserve: usize,
    stats: &mut Stats,
) -> Emitted {
    let status_info = c.kind.status_info();
    let need = Emitter::data_ref_len(c.key_hash.is_some(), status_info != 0, reference.len())
        + e.info_ts_len(c.source_timestamp);
    if need + reserve > e.room() {
        return Emitted::Nothing;
    }
    if !(e.info_ts(c.source_timestamp)
        && e.data_ref(
            reader_id,
            writer_id,
            c.sn,
            c.key_hash.as_ref(),
            status_info,
            reference,
        ))
    {
        return Emitted::Nothing;
    }
    stats.sent_data += 1;
    stats.sent_data_refs += 1;
    Emitted::All
}

/// Emits fragment `f` (1-based) of `c` as one DATA_FRAG (preceded by an INFO_TS
/// when the message does not hold the change's source timestamp yet); false if
/// it does not fit with `reserve` bytes left over.
pub(super) fn emit_fragment(
    e: &mut Emitter<'_>,
    ids: (EntityId, EntityId),
    c: &CacheChange,
    sizes: Sizes,
    f: u32,
    reserve: usize,
) -> bool {
    let frag = sizes.frag;
    let start = (f as usize - 1).saturating_mul(frag);
    let Some(bytes) = c.payload.get(start..c.payload.len().min(start + frag)) else {
        return true; // Beyond the sample: nothing to send.
    };
    let key_only = c.kind != ChangeKind::Alive;
    let qos = f == 1;
    // (A key hash given to a writer of an unkeyed topic is not sent with its
    // fragments: no room is kept for it, and its single instance needs none.)
    let key_hash = c.key_hash.as_ref().filter(|_| qos && sizes.frag_key_hash);
    let need = Emitter::data_frag_len(key_hash.is_some(), qos && key_only, bytes.len())
        + e.info_ts_len(c.source_timestamp);
    if need + reserve > e.room() {
        return false;
    }
    if !e.info_ts(c.source_timestamp) {
        return false;
    }
    e.data_frag(
        ids.0,
        ids.1,
        c.sn,
        key_hash,
        if qos { c.kind.status_info() } else { 0 },
        f,
        frag as u16,
        c.payload.len() as u32,
        bytes,
        key_only,
    )
}
