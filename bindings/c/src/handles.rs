//! The handle table: C holds 64-bit handles, never pointers. A handle is a slot index and
//! the slot's generation; deleting an entity frees the slot and bumps its generation, so a
//! deleted (or forged) handle is found stale and reported as
//! [`FERRODDS_RETCODE_ALREADY_DELETED`](crate::error::FERRODDS_RETCODE_ALREADY_DELETED).
//!
//! Lookups clone the entity's `Arc` under a read lock and release it before the operation
//! runs, so a blocking call (a wait, a KEEP_ALL write) never holds the table, and an
//! entity deleted while another thread is inside a call on it stays alive until that call
//! returns.

use std::sync::{Arc, PoisonError, RwLock};

use crate::entities::{ParticipantEntry, ReaderEntry, TopicEntry, WaitSetEntry, WriterEntry};
use crate::error::{CError, CResult};

/// One entity in the table.
#[derive(Clone)]
pub(crate) enum Entity {
    /// A participant.
    Participant(Arc<ParticipantEntry>),
    /// A topic.
    Topic(Arc<TopicEntry>),
    /// A writer.
    Writer(Arc<WriterEntry>),
    /// A reader.
    Reader(Arc<ReaderEntry>),
    /// A wait set.
    WaitSet(Arc<WaitSetEntry>),
    /// A guard condition.
    Guard(Arc<ferrodds::GuardCondition>),
}

impl Entity {
    /// The kind's name, for messages.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Self::Participant(_) => "participant",
            Self::Topic(_) => "topic",
            Self::Writer(_) => "writer",
            Self::Reader(_) => "reader",
            Self::WaitSet(_) => "wait set",
            Self::Guard(_) => "guard condition",
        }
    }
}

struct Slot {
    generation: u32,
    /// The entity and the handle of its participant (0 for participants and wait sets).
    entry: Option<(Entity, u64)>,
}

/// The table: slots and a free list.
#[derive(Default)]
struct Table {
    slots: Vec<Slot>,
    free: Vec<u32>,
}

static TABLE: RwLock<Table> = RwLock::new(Table {
    slots: Vec::new(),
    free: Vec::new(),
});

fn split(handle: u64) -> Option<(usize, u32)> {
    let index = (handle & 0xffff_ffff) as u32;
    let generation = (handle >> 32) as u32;
    (index != 0).then(|| ((index - 1) as usize, generation))
}

fn join(index: usize, generation: u32) -> u64 {
    (u64::from(generation) << 32) | (index as u64 + 1)
}

/// Inserts an entity owned by participant `parent` (0: none) and returns its handle
/// (never 0).
pub(crate) fn insert(entity: Entity, parent: u64) -> CResult<u64> {
    let mut t = TABLE.write().unwrap_or_else(PoisonError::into_inner);
    if let Some(i) = t.free.pop() {
        let slot = &mut t.slots[i as usize];
        slot.entry = Some((entity, parent));
        return Ok(join(i as usize, slot.generation));
    }
    if t.slots.len() >= u32::MAX as usize - 1 {
        return Err(CError::Dds(ferrodds::DdsError::OutOfResources {
            what: "handle table full",
        }));
    }
    t.slots.push(Slot {
        generation: 1,
        entry: Some((entity, parent)),
    });
    Ok(join(t.slots.len() - 1, 1))
}

/// Reserves a handle for an entity still being created (so that callbacks installed
/// during its creation know it): lookups fail until [`fill`] stores the entity;
/// [`release`] frees it if the creation fails.
pub(crate) fn reserve() -> CResult<u64> {
    let mut t = TABLE.write().unwrap_or_else(PoisonError::into_inner);
    if let Some(i) = t.free.pop() {
        return Ok(join(i as usize, t.slots[i as usize].generation));
    }
    if t.slots.len() >= u32::MAX as usize - 1 {
        return Err(CError::Dds(ferrodds::DdsError::OutOfResources {
            what: "handle table full",
        }));
    }
    t.slots.push(Slot {
        generation: 1,
        entry: None,
    });
    Ok(join(t.slots.len() - 1, 1))
}

/// Stores the entity of a handle from [`reserve`].
pub(crate) fn fill(handle: u64, entity: Entity, parent: u64) {
    let mut t = TABLE.write().unwrap_or_else(PoisonError::into_inner);
    if let Some((i, g)) = split(handle) {
        if let Some(slot) = t.slots.get_mut(i).filter(|s| s.generation == g) {
            slot.entry = Some((entity, parent));
        }
    }
}

/// Frees a handle from [`reserve`] whose entity could not be created.
pub(crate) fn release(handle: u64) {
    let mut t = TABLE.write().unwrap_or_else(PoisonError::into_inner);
    if let Some((i, g)) = split(handle) {
        if let Some(slot) = t.slots.get_mut(i).filter(|s| s.generation == g) {
            slot.entry = None;
            slot.generation = slot.generation.wrapping_add(1).max(1);
            t.free.push(i as u32);
        }
    }
}

/// Inserts through [`reserve`] and [`fill`]: `make` gets the handle and creates the
/// entity.
pub(crate) fn insert_with(parent: u64, make: impl FnOnce(u64) -> CResult<Entity>) -> CResult<u64> {
    let h = reserve()?;
    match make(h) {
        Ok(e) => {
            fill(h, e, parent);
            Ok(h)
        }
        Err(e) => {
            release(h);
            Err(e)
        }
    }
}

/// The entity of `handle`, or [`CError::Deleted`] (`what` names the argument).
pub(crate) fn get(handle: u64, what: &'static str) -> CResult<Entity> {
    let t = TABLE.read().unwrap_or_else(PoisonError::into_inner);
    split(handle)
        .and_then(|(i, g)| {
            t.slots
                .get(i)
                .filter(|s| s.generation == g)
                .and_then(|s| s.entry.as_ref())
        })
        .map(|(e, _)| e.clone())
        .ok_or(CError::Deleted(what))
}

/// Removes `handle` from the table and returns its entity (dropped by the caller, outside
/// the table lock).
pub(crate) fn remove(handle: u64, what: &'static str) -> CResult<Entity> {
    let mut t = TABLE.write().unwrap_or_else(PoisonError::into_inner);
    let Some((i, g)) = split(handle) else {
        return Err(CError::Deleted(what));
    };
    let slot = t
        .slots
        .get_mut(i)
        .filter(|s| s.generation == g && s.entry.is_some())
        .ok_or(CError::Deleted(what))?;
    let (e, _) = slot.entry.take().ok_or(CError::Deleted(what))?;
    // Generation 0 is never handed out, so a wrapped counter skips it.
    slot.generation = slot.generation.wrapping_add(1).max(1);
    t.free.push(i as u32);
    Ok(e)
}

/// Removes `handle` only if its entity is of the kind `check` accepts (the entity is
/// returned; the table is unchanged on a kind mismatch).
pub(crate) fn remove_if(
    handle: u64,
    what: &'static str,
    check: impl Fn(&Entity) -> bool,
) -> CResult<Entity> {
    let e = get(handle, what)?;
    if !check(&e) {
        return Err(CError::BadParameter(format!(
            "{what}: the handle is a {}",
            e.kind()
        )));
    }
    remove(handle, what)
}

/// Removes every entity whose participant is `parent` and returns them (dropped by the
/// caller, children before the participant).
pub(crate) fn remove_children(parent: u64) -> Vec<Entity> {
    let mut t = TABLE.write().unwrap_or_else(PoisonError::into_inner);
    let mut out = Vec::new();
    let mut freed = Vec::new();
    for (i, slot) in t.slots.iter_mut().enumerate() {
        if matches!(slot.entry, Some((_, p)) if p == parent) {
            if let Some((e, _)) = slot.entry.take() {
                out.push(e);
            }
            slot.generation = slot.generation.wrapping_add(1).max(1);
            freed.push(i as u32);
        }
    }
    t.free.extend(freed);
    out
}

/// Number of live entities (tests).
#[cfg(test)]
pub(crate) fn live() -> usize {
    let t = TABLE.read().unwrap_or_else(PoisonError::into_inner);
    t.slots.iter().filter(|s| s.entry.is_some()).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deleted_and_forged_handles_are_stale() {
        let g = Arc::new(ferrodds::GuardCondition::new());
        let h = insert(Entity::Guard(Arc::clone(&g)), 0).unwrap();
        assert_ne!(h, 0);
        assert!(matches!(get(h, "x"), Ok(Entity::Guard(_))));
        assert!(remove(h, "x").is_ok());
        assert!(matches!(get(h, "x"), Err(CError::Deleted("x"))));
        assert!(matches!(remove(h, "x"), Err(CError::Deleted("x"))));
        // The slot is reused with a new generation: the old handle stays stale.
        let h2 = insert(Entity::Guard(g), 0).unwrap();
        assert_ne!(h, h2);
        assert!(get(h, "x").is_err());
        assert!(get(h2, "x").is_ok());
        for forged in [0, u64::MAX, h2 ^ (1 << 40), h2 + 1_000_000] {
            assert!(get(forged, "x").is_err(), "{forged:#x}");
        }
        remove(h2, "x").unwrap();
    }

    #[test]
    fn children_go_with_their_participant() {
        let g = Arc::new(ferrodds::GuardCondition::new());
        let parent = 0xdead_0000_0001;
        let a = insert(Entity::Guard(Arc::clone(&g)), parent).unwrap();
        let b = insert(Entity::Guard(Arc::clone(&g)), parent).unwrap();
        let c = insert(Entity::Guard(g), 0).unwrap();
        assert_eq!(remove_children(parent).len(), 2);
        assert!(get(a, "a").is_err() && get(b, "b").is_err());
        assert!(get(c, "c").is_ok());
        assert!(remove_if(c, "c", |e| matches!(e, Entity::Writer(_))).is_err());
        assert!(get(c, "c").is_ok(), "a kind mismatch removes nothing");
        remove(c, "c").unwrap();
        let _ = live();
    }

    #[test]
    fn reserved_handles_resolve_once_filled() {
        let g = Arc::new(ferrodds::GuardCondition::new());
        let mut seen = 0;
        let h = insert_with(0, |h| {
            seen = h;
            assert!(get(h, "r").is_err(), "not yet filled");
            Ok(Entity::Guard(Arc::clone(&g)))
        })
        .unwrap();
        assert_eq!(h, seen);
        assert!(get(h, "r").is_ok());
        remove(h, "r").unwrap();
        let mut failed = 0;
        let err = insert_with(0, |h| {
            failed = h;
            Err(CError::NoData)
        });
        assert!(err.is_err());
        assert!(get(failed, "r").is_err(), "released");
    }
}
