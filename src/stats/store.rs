//! The shared-memory store of the statistics entries (see [`super`]): one entry per TTL table
//! (and part) of every database, `jsonb_ttl.max_tables` of them, sized when the server starts,
//! with a hash index over (database, table, part) so that finding an entry costs the same at
//! 10 entries or 100,000.
//!
//! The area is one `ShmemInitStruct` block: a [`Header`], then the entries (those in use packed
//! at the front), then the index (open addressing, linear probing; a slot holds an entry's
//! position + 1, 0 when free), guarded by one LWLock of a named tranche. pgrx's `PgLwLock<T>`
//! needs a type of fixed size, which a size read from a GUC at start is not.

use super::Entry;
use pgrx::pg_sys;
use pgrx::prelude::*;
use std::sync::atomic::{AtomicPtr, Ordering};

const NAME: &std::ffi::CStr = c"jsonb_ttl_stats";

#[repr(C)]
struct Header {
    /// Entries the store holds at most (`jsonb_ttl.max_tables` at start).
    capacity: usize,
    /// Entries in use: `entries[..used]`.
    used: usize,
    /// Slots of the index: a power of two, at least twice the capacity.
    slots: usize,
    /// Records that found no free entry since the start or the last reset.
    refused: u64,
    /// Whether the log said the store is full (again once it has had room since).
    full_logged: bool,
}

/// The store, as one process sees it under its lock.
pub(super) struct Store {
    header: *mut Header,
    entries: *mut Entry,
    index: *mut u32,
}

static HEADER: AtomicPtr<Header> = AtomicPtr::new(std::ptr::null_mut());
static LOCK: AtomicPtr<pg_sys::LWLock> = AtomicPtr::new(std::ptr::null_mut());
static mut PREV_REQUEST_HOOK: Option<unsafe extern "C-unwind" fn()> = None;
static mut PREV_STARTUP_HOOK: Option<unsafe extern "C-unwind" fn()> = None;

fn capacity() -> usize {
    crate::gucs::MAX_TABLES.get().max(1) as usize
}

fn slots_for(capacity: usize) -> usize {
    (capacity * 2).next_power_of_two()
}

fn layout(capacity: usize) -> (usize, usize, usize) {
    let align = |n: usize| n.div_ceil(16) * 16;
    let entries_at = align(size_of::<Header>());
    let index_at = align(entries_at + capacity * size_of::<Entry>());
    let size = index_at + slots_for(capacity) * size_of::<u32>();
    (entries_at, index_at, size)
}

/// The shared memory one entry costs, the index's share included (what docs/configuration.md
/// quotes for `jsonb_ttl.max_tables`).
pub fn bytes_per_entry() -> usize {
    size_of::<Entry>() + 2 * size_of::<u32>()
}

/// Installs the hooks that request and attach the store; from `_PG_init` while preloading,
/// after the GUCs are defined.
pub(super) fn init() {
    unsafe {
        PREV_REQUEST_HOOK = pg_sys::shmem_request_hook;
        pg_sys::shmem_request_hook = Some(on_request);
        PREV_STARTUP_HOOK = pg_sys::shmem_startup_hook;
        pg_sys::shmem_startup_hook = Some(on_startup);
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn on_request() {
    unsafe {
        if let Some(previous) = PREV_REQUEST_HOOK {
            previous();
        }
        pg_sys::RequestAddinShmemSpace(layout(capacity()).2);
        pg_sys::RequestNamedLWLockTranche(NAME.as_ptr(), 1);
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn on_startup() {
    unsafe {
        if let Some(previous) = PREV_STARTUP_HOOK {
            previous();
        }
        let capacity = capacity();
        let (_, _, size) = layout(capacity);
        let init_lock = &raw mut (*pg_sys::MainLWLockArray.add(21)).lock; // AddinShmemInitLock
        pg_sys::LWLockAcquire(init_lock, pg_sys::LWLockMode::LW_EXCLUSIVE);
        let mut found = false;
        let header = pg_sys::ShmemInitStruct(NAME.as_ptr(), size, &mut found).cast::<Header>();
        if !found {
            std::ptr::write_bytes(header.cast::<u8>(), 0, size);
            header.write(Header {
                capacity,
                used: 0,
                slots: slots_for(capacity),
                refused: 0,
                full_logged: false,
            });
        }
        LOCK.store(
            &raw mut (*pg_sys::GetNamedLWLockTranche(NAME.as_ptr())).lock,
            Ordering::Release,
        );
        HEADER.store(header, Ordering::Release);
        pg_sys::LWLockRelease(init_lock);
    }
}

/// Holds the store's lock until dropped.
struct Held(*mut pg_sys::LWLock);

impl Drop for Held {
    fn drop(&mut self) {
        unsafe { pg_sys::LWLockRelease(self.0) };
    }
}

fn attached() -> Option<(Store, *mut pg_sys::LWLock)> {
    let header = HEADER.load(Ordering::Acquire);
    let lock = LOCK.load(Ordering::Acquire);
    if header.is_null() || lock.is_null() {
        return None;
    }
    let (entries_at, index_at, _) = layout(unsafe { (*header).capacity });
    let base = header.cast::<u8>();
    let store = Store {
        header,
        entries: unsafe { base.add(entries_at) }.cast(),
        index: unsafe { base.add(index_at) }.cast(),
    };
    Some((store, lock))
}

/// Runs `f` on the store under its lock, shared; `R::default()` when there is no store (not
/// preloaded).
pub(super) fn read<R: Default>(f: impl FnOnce(&Store) -> R) -> R {
    let Some((store, lock)) = attached() else {
        return R::default();
    };
    unsafe { pg_sys::LWLockAcquire(lock, pg_sys::LWLockMode::LW_SHARED) };
    let _held = Held(lock);
    f(&store)
}

/// Runs `f` on the store under its lock, exclusive.
pub(super) fn write<R: Default>(f: impl FnOnce(&mut Store) -> R) -> R {
    let Some((mut store, lock)) = attached() else {
        return R::default();
    };
    unsafe { pg_sys::LWLockAcquire(lock, pg_sys::LWLockMode::LW_EXCLUSIVE) };
    let _held = Held(lock);
    f(&mut store)
}

fn hash(dboid: u32, reloid: u32, part: u8) -> u64 {
    let key = ((dboid as u64) << 32 | reloid as u64) ^ ((part as u64) << 61);
    // splitmix64's finalizer
    let mut z = key.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// What [`Store::entry`] found or made.
pub(super) enum Found<'a> {
    Entry(&'a mut Entry),
    /// The store is full; `first` when this is the first refusal since it last had room.
    Full {
        first: bool,
    },
}

impl Store {
    fn header(&self) -> &Header {
        unsafe { &*self.header }
    }

    fn header_mut(&mut self) -> &mut Header {
        unsafe { &mut *self.header }
    }

    /// The entries in use.
    pub(super) fn entries(&self) -> &[Entry] {
        unsafe { std::slice::from_raw_parts(self.entries, self.header().used) }
    }

    pub(super) fn entries_mut(&mut self) -> &mut [Entry] {
        unsafe { std::slice::from_raw_parts_mut(self.entries, self.header().used) }
    }

    fn index_mut(&mut self) -> &mut [u32] {
        unsafe { std::slice::from_raw_parts_mut(self.index, self.header().slots) }
    }

    pub(super) fn capacity(&self) -> usize {
        self.header().capacity
    }

    pub(super) fn refused(&self) -> u64 {
        self.header().refused
    }

    /// The slot of the index where (dboid, reloid, part) is, or the free one where it would go.
    fn slot(&self, dboid: u32, reloid: u32, part: u8) -> usize {
        let mask = self.header().slots - 1;
        let index = unsafe { std::slice::from_raw_parts(self.index, self.header().slots) };
        let entries = self.entries();
        let mut at = hash(dboid, reloid, part) as usize & mask;
        loop {
            match index[at] {
                0 => return at,
                n => {
                    let e = &entries[n as usize - 1];
                    if e.dboid == dboid && e.reloid == reloid && e.part == part {
                        return at;
                    }
                }
            }
            at = (at + 1) & mask;
        }
    }

    /// The entry of (dboid, reloid, part), if it has one.
    pub(super) fn find(&self, dboid: u32, reloid: u32, part: u8) -> Option<&Entry> {
        let at = self.slot(dboid, reloid, part);
        let n = unsafe { *self.index.add(at) };
        (n != 0).then(|| &self.entries()[n as usize - 1])
    }

    /// The entry of (dboid, reloid, part), made (empty) when it has none and there is room.
    pub(super) fn entry(&mut self, dboid: u32, reloid: u32, part: u8) -> Found<'_> {
        let at = self.slot(dboid, reloid, part);
        let n = unsafe { *self.index.add(at) } as usize;
        if n != 0 {
            return Found::Entry(&mut self.entries_mut()[n - 1]);
        }
        let used = self.header().used;
        if used >= self.header().capacity {
            let header = self.header_mut();
            header.refused += 1;
            let first = !std::mem::replace(&mut header.full_logged, true);
            return Found::Full { first };
        }
        unsafe {
            self.entries.add(used).write(Entry {
                dboid,
                reloid,
                part,
                ..Entry::EMPTY
            });
            *self.index.add(at) = used as u32 + 1;
        }
        self.header_mut().used = used + 1;
        Found::Entry(&mut self.entries_mut()[used])
    }

    /// Keeps only the entries for which `keep` is true (packed at the front, the index made
    /// again); returns how many went.
    pub(super) fn retain(&mut self, mut keep: impl FnMut(&Entry) -> bool) -> usize {
        let used = self.header().used;
        let mut kept = 0;
        for i in 0..used {
            let entry = unsafe { *self.entries.add(i) };
            if keep(&entry) {
                unsafe { self.entries.add(kept).write(entry) };
                kept += 1;
            }
        }
        if kept == used {
            return 0;
        }
        self.header_mut().used = kept;
        self.header_mut().full_logged = false;
        self.index_mut().fill(0);
        for i in 0..kept {
            let (dboid, reloid, part) = {
                let e = &self.entries()[i];
                (e.dboid, e.reloid, e.part)
            };
            let at = self.slot(dboid, reloid, part);
            unsafe { *self.index.add(at) = i as u32 + 1 };
        }
        used - kept
    }

    /// Starts the count of refusals over (`ttl_stats_reset()`).
    pub(super) fn reset_refused(&mut self) {
        self.header_mut().refused = 0;
        self.header_mut().full_logged = false;
    }

    /// The position of the entry least recently updated whose table is not set aside at
    /// `now`: what a table that must be recorded (set aside) takes when the store is full.
    pub(super) fn least_recent(&self, now: i64) -> Option<usize> {
        (0..self.header().used)
            .filter(|&i| self.entries()[i].set_aside_until <= now)
            .min_by_key(|&i| self.entries()[i].touched_at)
    }

    /// Whether every entry is taken.
    pub(super) fn is_full(&self) -> bool {
        self.header().used >= self.header().capacity
    }

    /// Frees the entry at `position`.
    pub(super) fn evict(&mut self, position: usize) {
        let old = self.entries()[position];
        // through a rebuild of the index: rare (a full store, and a table to set aside)
        self.retain(|e| !(e.dboid == old.dboid && e.reloid == old.reloid && e.part == old.part));
    }
}
