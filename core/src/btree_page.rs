//! A page of a TTL index's btree read from its bytes, so that the worker counts the entries
//! before a cutoff leaf page by leaf page (the extension's `leaf_pages`) instead of through an
//! index scan that returns them one by one. The layout is nbtree's of PostgreSQL 14 to 18
//! (`src/include/access/nbtree.h`, `itup.h`, `bufpage.h`, `itemid.h`), index version 4 (built
//! by 12 or later: heap TIDs in pivots; from 13, deduplicated posting lists), on a
//! little-endian machine; a page that does not look like one gives `None`, and the caller
//! counts through an index scan. Every read is bounds-checked: a page image is only ever read,
//! never trusted.

/// A page's size (PostgreSQL's default `BLCKSZ`; another size gives `None` everywhere).
pub const PAGE_SIZE: usize = 8192;
/// The page header's size (`SizeOfPageHeaderData`): the line pointers start there.
const HEADER: usize = 24;
/// `MAXALIGN(sizeof(BTPageOpaqueData))`: a btree page's special space.
const SPECIAL: usize = 16;
/// `BTREE_MAGIC`, in the metapage.
const MAGIC: u32 = 0x053162;
/// `BTREE_VERSION`: the only version read here (`BTREE_NOVAC_VERSION` 3 has no posting lists).
const VERSION: u32 = 4;

/// `btpo_flags` bits.
const BTP_LEAF: u16 = 1 << 0;
const BTP_DELETED: u16 = 1 << 2;
const BTP_META: u16 = 1 << 3;
const BTP_HALF_DEAD: u16 = 1 << 4;

/// `lp_flags` values.
const LP_NORMAL: u32 = 1;
const LP_DEAD: u32 = 3;

/// `t_info` bits of an index tuple.
const INDEX_SIZE_MASK: u16 = 0x1FFF;
const INDEX_ALT_TID_MASK: u16 = 0x2000;
const INDEX_VAR_MASK: u16 = 0x4000;
const INDEX_NULL_MASK: u16 = 0x8000;
/// `ip_posid` bits of a tuple with `INDEX_ALT_TID_MASK`.
const BT_OFFSET_MASK: u16 = 0x0FFF;
const BT_PIVOT_HEAP_TID_ATTR: u16 = 0x1000;
const BT_IS_POSTING: u16 = 0x2000;
/// Where the first key of an index tuple without nulls starts: `MAXALIGN(sizeof(IndexTupleData))`.
const KEY_OFFSET: usize = 8;

/// The metapage's fields a descent reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meta {
    /// The "fast root": the lowest page with more than one child (`P_NONE`, 0, when empty).
    pub fast_root: u32,
    /// Its level (0: a leaf).
    pub fast_level: u32,
}

/// A btree page's special space (`BTPageOpaqueData`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Opaque {
    /// The left sibling (`P_NONE`, 0: the leftmost page of its level).
    pub prev: u32,
    /// The right sibling (`P_NONE`, 0: the rightmost page of its level).
    pub next: u32,
    /// The page's level (0: a leaf).
    pub level: u32,
    flags: u16,
}

impl Opaque {
    /// A leaf page.
    pub fn is_leaf(&self) -> bool {
        self.flags & BTP_LEAF != 0
    }

    /// A page a scan steps over (deleted or half-dead: `P_IGNORE`).
    pub fn ignored(&self) -> bool {
        self.flags & (BTP_DELETED | BTP_HALF_DEAD) != 0
    }

    /// The rightmost page of its level (`P_RIGHTMOST`): it has no high key.
    pub fn rightmost(&self) -> bool {
        self.next == 0
    }

    /// The offset of the page's first data item (`P_FIRSTDATAKEY`): after the high key, if any.
    fn first_data_item(&self) -> u16 {
        if self.rightmost() {
            1
        } else {
            2
        }
    }
}

/// A page image, `PAGE_SIZE` bytes.
#[derive(Clone, Copy)]
pub struct Page<'a>(&'a [u8]);

/// A leaf item as [`Page::leaf_items`] reads it: an entry not marked dead (or a posting list
/// of `tids` entries) keyed `key`, a `timestamptz`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeafItem {
    pub key: i64,
    pub tids: u16,
}

impl<'a> Page<'a> {
    /// The page `bytes`, if it is a btree page of the size read here.
    pub fn new(bytes: &'a [u8]) -> Option<Page<'a>> {
        let page = Page(bytes);
        (bytes.len() == PAGE_SIZE
            && cfg!(target_endian = "little")
            && page.u16_at(16)? as usize == PAGE_SIZE - SPECIAL
            && page.u16_at(18)? & 0xFF00 == PAGE_SIZE as u16)
            .then_some(page)
    }

    fn u16_at(&self, at: usize) -> Option<u16> {
        Some(u16::from_ne_bytes(self.0.get(at..at + 2)?.try_into().ok()?))
    }

    fn u32_at(&self, at: usize) -> Option<u32> {
        Some(u32::from_ne_bytes(self.0.get(at..at + 4)?.try_into().ok()?))
    }

    /// The page's special space.
    pub fn opaque(&self) -> Option<Opaque> {
        let at = PAGE_SIZE - SPECIAL;
        Some(Opaque {
            prev: self.u32_at(at)?,
            next: self.u32_at(at + 4)?,
            level: self.u32_at(at + 8)?,
            flags: self.u16_at(at + 12)?,
        })
    }

    /// The metapage's fields, if this is the metapage of a version 4 btree.
    pub fn meta(&self) -> Option<Meta> {
        let opaque = self.opaque()?;
        (opaque.flags & BTP_META != 0
            && self.u32_at(HEADER)? == MAGIC
            && self.u32_at(HEADER + 4)? == VERSION)
            .then_some(())?;
        Some(Meta {
            fast_root: self.u32_at(HEADER + 16)?,
            fast_level: self.u32_at(HEADER + 20)?,
        })
    }

    /// The number of line pointers (`PageGetMaxOffsetNumber`).
    fn max_offset(&self) -> Option<u16> {
        let lower = self.u16_at(12)? as usize;
        (HEADER..=PAGE_SIZE - SPECIAL)
            .contains(&lower)
            .then_some(((lower - HEADER) / 4) as u16)
    }

    /// The line pointer at `offset` (from 1): its flags, and its tuple's bytes when normal.
    fn item(&self, offset: u16) -> Option<(u32, &'a [u8])> {
        let raw = self.u32_at(HEADER + 4 * (offset as usize).checked_sub(1)?)?;
        let (off, flags, len) = (
            (raw & 0x7FFF) as usize,
            (raw >> 15) & 3,
            (raw >> 17) as usize,
        );
        if flags != LP_NORMAL {
            return Some((flags, &[]));
        }
        (off >= HEADER && len >= KEY_OFFSET && off + len <= PAGE_SIZE - SPECIAL).then_some(())?;
        Some((flags, self.0.get(off..off + len)?))
    }

    /// The child an internal page's first data item points to: the leftmost child, where a
    /// descent to the head of the index goes. That item is the minus-infinity pivot (no key
    /// attribute, no heap TID: `BTreeTupleSetNAtts(itup, 0, false)`); anything else is `None`.
    pub fn first_child(&self) -> Option<u32> {
        let opaque = self.opaque()?;
        (!opaque.is_leaf()).then_some(())?;
        let (flags, tuple) = self.item(opaque.first_data_item())?;
        let posid = u16::from_ne_bytes(tuple.get(4..6)?.try_into().ok()?);
        let info = u16::from_ne_bytes(tuple.get(6..8)?.try_into().ok()?);
        let minus_infinity = flags == LP_NORMAL
            && tuple.len() == KEY_OFFSET
            && info & INDEX_ALT_TID_MASK != 0
            && posid & (BT_OFFSET_MASK | BT_PIVOT_HEAP_TID_ATTR) == 0;
        minus_infinity.then_some(())?;
        let hi = u16::from_ne_bytes(tuple.get(0..2)?.try_into().ok()?) as u32;
        let lo = u16::from_ne_bytes(tuple.get(2..4)?.try_into().ok()?) as u32;
        Some(hi << 16 | lo)
    }

    /// A leaf page's items in order, without those marked dead (`LP_DEAD`: an index scan steps
    /// over them too); `None` in the list for an item that is not a one-key `timestamptz`
    /// entry as this module reads it (the caller gives up).
    pub fn leaf_items(&self) -> Option<impl Iterator<Item = Option<LeafItem>> + 'a> {
        let opaque = self.opaque()?;
        (opaque.is_leaf() && !opaque.ignored()).then_some(())?;
        let page = *self;
        Some(
            (opaque.first_data_item()..=self.max_offset()?).filter_map(move |offset| {
                match page.item(offset) {
                    Some((LP_DEAD, _)) => None,
                    Some((LP_NORMAL, tuple)) => Some(leaf_item(tuple)),
                    _ => Some(None),
                }
            }),
        )
    }
}

/// A normal leaf tuple's key and number of heap TIDs.
fn leaf_item(tuple: &[u8]) -> Option<LeafItem> {
    let posid = u16::from_ne_bytes(tuple.get(4..6)?.try_into().ok()?);
    let info = u16::from_ne_bytes(tuple.get(6..8)?.try_into().ok()?);
    // (a null, in the key or in an INCLUDE column, moves the key behind a null bitmap; a
    // TTL index has neither: its predicate is `IS NOT NULL` and it has one column)
    if (info & INDEX_SIZE_MASK) as usize != tuple.len()
        || info & (INDEX_NULL_MASK | INDEX_VAR_MASK) != 0
    {
        return None;
    }
    let tids = match info & INDEX_ALT_TID_MASK {
        0 => 1,
        // a posting list: how many heap TIDs it holds (a pivot tuple has no place on a leaf
        // but as the high key, which is not read here)
        _ if posid & BT_IS_POSTING != 0 && posid & BT_OFFSET_MASK > 1 => posid & BT_OFFSET_MASK,
        _ => return None,
    };
    let key = i64::from_ne_bytes(tuple.get(KEY_OFFSET..KEY_OFFSET + 8)?.try_into().ok()?);
    Some(LeafItem { key, tids })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page image built item by item, as nbtree lays it out.
    struct Builder {
        bytes: Vec<u8>,
        items: u16,
        upper: usize,
    }

    impl Builder {
        fn new(next: u32, flags: u16) -> Builder {
            let mut bytes = vec![0u8; PAGE_SIZE];
            bytes[16..18].copy_from_slice(&((PAGE_SIZE - SPECIAL) as u16).to_ne_bytes());
            bytes[18..20].copy_from_slice(&(PAGE_SIZE as u16 | 4).to_ne_bytes());
            let at = PAGE_SIZE - SPECIAL;
            bytes[at + 4..at + 8].copy_from_slice(&next.to_ne_bytes());
            bytes[at + 12..at + 14].copy_from_slice(&flags.to_ne_bytes());
            let mut page = Builder {
                bytes,
                items: 0,
                upper: PAGE_SIZE - SPECIAL,
            };
            page.set_lower();
            page
        }

        fn set_lower(&mut self) {
            let lower = (HEADER + 4 * self.items as usize) as u16;
            self.bytes[12..14].copy_from_slice(&lower.to_ne_bytes());
        }

        /// Adds a tuple with `flags` in its line pointer.
        fn tuple(mut self, tuple: &[u8], lp_flags: u32) -> Builder {
            self.upper -= tuple.len();
            self.bytes[self.upper..self.upper + tuple.len()].copy_from_slice(tuple);
            let raw = self.upper as u32 | lp_flags << 15 | (tuple.len() as u32) << 17;
            let at = HEADER + 4 * self.items as usize;
            self.bytes[at..at + 4].copy_from_slice(&raw.to_ne_bytes());
            self.items += 1;
            self.set_lower();
            self
        }

        /// Adds an index tuple: its TID fields, `t_info` flags and key (none: a null).
        fn entry(
            self,
            tid: (u32, u16),
            info_flags: u16,
            key: Option<i64>,
            lp_flags: u32,
        ) -> Builder {
            let mut tuple = vec![0u8; 16];
            tuple[0..2].copy_from_slice(&((tid.0 >> 16) as u16).to_ne_bytes());
            tuple[2..4].copy_from_slice(&(tid.0 as u16).to_ne_bytes());
            tuple[4..6].copy_from_slice(&tid.1.to_ne_bytes());
            if let Some(key) = key {
                tuple[8..16].copy_from_slice(&key.to_ne_bytes());
            }
            let info = 16 | info_flags | if key.is_none() { INDEX_NULL_MASK } else { 0 };
            tuple[6..8].copy_from_slice(&info.to_ne_bytes());
            self.tuple(&tuple, lp_flags)
        }

        fn key(self, key: i64) -> Builder {
            self.entry((7, 1), 0, Some(key), LP_NORMAL)
        }
    }

    fn items(bytes: &[u8]) -> Vec<Option<LeafItem>> {
        Page::new(bytes).unwrap().leaf_items().unwrap().collect()
    }

    fn entries(key: i64, tids: u16) -> Option<LeafItem> {
        Some(LeafItem { key, tids })
    }

    #[test]
    fn leaf_items_table() {
        // a leaf with a right sibling: its first item is the high key, not read
        let page = Builder::new(5, BTP_LEAF)
            .key(99)
            .key(10)
            .entry(
                (3, BT_IS_POSTING | 3),
                INDEX_ALT_TID_MASK,
                Some(20),
                LP_NORMAL,
            )
            .entry((7, 2), 0, Some(25), LP_DEAD)
            .key(30);
        #[rustfmt::skip]
        let expected = vec![
            entries(10, 1),
            entries(20, 3),             // a posting list of three
            /* 25: marked dead, skipped */
            entries(30, 1),
        ];
        assert_eq!(items(&page.bytes), expected);
        // the rightmost leaf has no high key: its first item is data
        let page = Builder::new(0, BTP_LEAF).key(99).key(10);
        assert_eq!(items(&page.bytes), vec![entries(99, 1), entries(10, 1)]);
        // an empty leaf
        assert_eq!(items(&Builder::new(0, BTP_LEAF).bytes), vec![]);
    }

    #[test]
    fn items_not_read_here() {
        #[rustfmt::skip]
        let cases: &[(&str, Builder)] = &[
            ("a pivot tuple on a leaf (no posting bit)", Builder::new(0, BTP_LEAF).entry((3, 1), INDEX_ALT_TID_MASK, Some(5), LP_NORMAL)),
            ("a posting list of one", Builder::new(0, BTP_LEAF).entry((3, BT_IS_POSTING | 1), INDEX_ALT_TID_MASK, Some(5), LP_NORMAL)),
            ("a redirect line pointer", Builder::new(0, BTP_LEAF).entry((3, 1), 0, Some(5), 2)),
            ("a tuple shorter than its key", Builder::new(0, BTP_LEAF).tuple(&[0, 0, 0, 0, 1, 0, 8, 0], LP_NORMAL)),
            ("a size that is not the line pointer's", Builder::new(0, BTP_LEAF).tuple(&[0, 0, 0, 0, 1, 0, 24, 0, 1, 0, 0, 0, 0, 0, 0, 0], LP_NORMAL)),
            ("a null (in the key or an INCLUDE column: the key moves)", Builder::new(0, BTP_LEAF).entry((7, 3), 0, None, LP_NORMAL)),
            ("a variable-width attribute (an INCLUDE column)", Builder::new(0, BTP_LEAF).entry((7, 3), INDEX_VAR_MASK, Some(5), LP_NORMAL)),
        ];
        for (what, page) in cases {
            assert_eq!(items(&page.bytes), vec![None], "{what}");
        }
    }

    #[test]
    fn pages_not_read_here() {
        let leaf = Builder::new(0, BTP_LEAF).key(1);
        assert!(
            Page::new(&leaf.bytes[..4096]).is_none(),
            "another page size"
        );
        let mut other_special = leaf.bytes.clone();
        other_special[16..18].copy_from_slice(&((PAGE_SIZE - 8) as u16).to_ne_bytes());
        assert!(Page::new(&other_special).is_none(), "another special size");
        // no leaf items from an internal page, a deleted or a half-dead leaf
        for flags in [0, BTP_LEAF | BTP_DELETED, BTP_LEAF | BTP_HALF_DEAD] {
            let page = Builder::new(0, flags).key(1);
            assert!(
                Page::new(&page.bytes).unwrap().leaf_items().is_none(),
                "flags {flags}"
            );
        }
        // line pointers past the special space
        let mut lower = leaf.bytes.clone();
        lower[12..14].copy_from_slice(&(PAGE_SIZE as u16).to_ne_bytes());
        assert!(Page::new(&lower).unwrap().leaf_items().is_none());
        // a tuple that runs into the special space
        let mut long = leaf.bytes.clone();
        let raw = u32::from_ne_bytes(long[HEADER..HEADER + 4].try_into().unwrap()) + (8 << 17);
        long[HEADER..HEADER + 4].copy_from_slice(&raw.to_ne_bytes());
        assert_eq!(items(&long), vec![None]);
    }

    #[test]
    fn internal_pages_and_metapage() {
        // an internal page with a right sibling: the high key, then the minus-infinity pivot
        // (8 bytes: a TID whose block is the child, no key attribute)
        let internal = |pivot: &[u8]| {
            Builder::new(9, 0)
                .entry((1, 1), 0, Some(50), LP_NORMAL)
                .tuple(pivot, LP_NORMAL)
                .bytes
        };
        let minus_infinity = [1, 0, 2, 0, 0, 0, 8, 0x20];
        let bytes = internal(&minus_infinity);
        let page = Page::new(&bytes).unwrap();
        assert_eq!(page.first_child(), Some(0x0001_0002));
        let opaque = page.opaque().unwrap();
        assert!(!opaque.is_leaf() && !opaque.ignored() && !opaque.rightmost());
        assert_eq!((opaque.prev, opaque.next, opaque.level), (0, 9, 0));
        #[rustfmt::skip]
        let not_minus_infinity: &[(&str, [u8; 8])] = &[
            ("a pivot with a key attribute", [1, 0, 2, 0, 1, 0, 8, 0x20]),
            ("a pivot with a heap TID", [1, 0, 2, 0, 0, 0x10, 8, 0x20]),
            ("no pivot at all", [1, 0, 2, 0, 0, 0, 8, 0]),
        ];
        for (what, pivot) in not_minus_infinity {
            assert_eq!(
                Page::new(&internal(pivot)).unwrap().first_child(),
                None,
                "{what}"
            );
        }
        // a leaf has no children
        let leaf = Builder::new(0, BTP_LEAF).key(1);
        assert_eq!(Page::new(&leaf.bytes).unwrap().first_child(), None);
        // the metapage: magic, version 4, root, level, fast root, fast level
        let mut meta = Builder::new(0, BTP_META).bytes;
        for (at, value) in [(24, MAGIC), (28, 4), (32, 3), (36, 2), (40, 12), (44, 1)] {
            meta[at..at + 4].copy_from_slice(&value.to_ne_bytes());
        }
        assert_eq!(
            Page::new(&meta).unwrap().meta(),
            Some(Meta {
                fast_root: 12,
                fast_level: 1
            })
        );
        meta[28..32].copy_from_slice(&3u32.to_ne_bytes());
        assert_eq!(
            Page::new(&meta).unwrap().meta(),
            None,
            "version 3: not read here"
        );
        assert_eq!(
            Page::new(&leaf.bytes).unwrap().meta(),
            None,
            "not the metapage"
        );
    }
}
