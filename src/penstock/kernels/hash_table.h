// hash_table.h — open-addressing hash tables shared by GPU threads or CPU cores.
//
// A table is `capacity` slots of `width` 64-bit words (capacity a power of two); word 0 of
// a slot is its tag: 0 when empty, else the key's hash with bit 0 set. Aggregation tables
// insert keys while other threads look them up, so a slot is claimed with the BUSY bit,
// filled, then published; readers that meet a BUSY slot wait for it. Join tables are built
// in one kernel and probed in later ones, so they need no such care (see join_insert).
#pragma once
#include "hash.h"
#include "text.h"
#include "xpu.h"

namespace xpu {

const uint64_t SLOT_BUSY = 1ull << 63;
// A partitioned aggregation keeps the rows whose hash, shifted by this, masked, equals its
// partition's index: bits above those that place a slot (bit 7 up) in any table that fits.
const int32_t PARTITION_SHIFT = 48;

XPU_FN uint64_t slot_tag(uint64_t hash) { return (hash | 1) & ~SLOT_BUSY; }

// Index of the slot holding the key (equal(slot) decides), inserting it if absent with
// init(slot, id), id numbering entries in insertion order; `inserted` says which happened.
// A new key is refused once `count` has reached `limit` (the table is full enough): the
// call returns -1 and the caller reports ERR_TABLE_FULL, so the executor can grow the
// table and redo the batch. Many threads can pass the first look at `count` at once (at a
// launch's start every resident thread does), so the id taken after claiming a slot decides:
// one at or past the limit gives the slot back. Without that, a small table filled to its
// last slot and every refused key walked all of it (a first run over 10^8 rows with 10^6
// groups took 13 s on an H100, its repeat 46 ms). A slot given back is looked at again by
// whoever waited on it, so no key is ever entered past an empty slot.
template <class Equal, class Init>
XPU_FN int64_t find_or_insert(uint64_t* table, uint64_t mask, int32_t width, uint64_t hash,
                              uint64_t* count, uint64_t limit, bool& inserted, Equal equal, Init init) {
  const uint64_t tag = slot_tag(hash);
  uint64_t pos = (hash >> 7) & mask;
  inserted = false;
  for (uint64_t probes = 0; probes <= mask; ++probes, pos = (pos + 1) & mask) {
    uint64_t* slot = table + pos * (uint64_t)width;
    // The tag is read through L1 (hot groups' slots are read by every row): a stale value
    // can only be 0 (read again from L2 before anything is decided) or BUSY (waited out
    // with device-coherent loads), since a published tag never changes during a launch;
    // stale keys behind a matching tag are read again after an acquire fence. Acquire
    // ordering is paid only where a slot was just published.
    uint64_t w = load_weak(slot);
    if (w == 0) w = load_relaxed(slot);
    while (true) {
      if (w == 0) {
        if (load_relaxed(count) >= limit) return -1;
        w = atomic_cas(slot, 0, tag | SLOT_BUSY);
        if (w == 0) {
          const uint64_t id = atomic_add(count, (uint64_t)1);
          if (id >= limit) {  // too many passed the first look: give the slot back
            store_release(slot, 0);
            return -1;
          }
          init(slot, id);
          store_release(slot, tag);
          inserted = true;
          return (int64_t)pos;
        }
      }
      if (!(w & SLOT_BUSY)) break;
      while (w & SLOT_BUSY) w = load_relaxed(slot);  // being filled right now: wait
      fence_acquire();
      // w is now the slot's key, or 0 if its claim was given back: then look again
    }
    if (w == tag) {
      if (equal(slot)) return (int64_t)pos;
      fence_acquire();  // the keys may have been read from a stale cache line: look again
      if (equal(slot)) return (int64_t)pos;
    }
  }
  return -1;
}

// Join tables: one slot per distinct hash, {tag, (rows with it << 32) | (last row entered + 1)},
// followed by the chain: a 32-bit word per build row, the row entered before it under the
// same hash, + 1 (0: none). A slot per build row, as linear probing has, puts a key's
// duplicates in one run that every insert of that key walks to its end: d rows sharing a
// key cost d^2 / 2 steps to build (10^6 rows over 1,000 keys took seconds on a CPU).
XPU_FN uint32_t* join_chain(uint64_t* table, uint64_t mask) { return (uint32_t*)(table + 2 * (mask + 1)); }
XPU_FN const uint32_t* join_chain(const uint64_t* table, uint64_t mask) {
  return (const uint32_t*)(table + 2 * (mask + 1));
}

XPU_FN bool join_insert(uint64_t* table, uint64_t mask, uint64_t hash, int64_t row) {
  const uint64_t tag = slot_tag(hash);
  uint64_t pos = (hash >> 7) & mask;
  for (uint64_t probes = 0; probes <= mask; ++probes, pos = (pos + 1) & mask) {
    uint64_t* slot = table + 2 * pos;
    uint64_t w = load_relaxed(slot);
    if (w == 0) {
      w = atomic_cas(slot, (uint64_t)0, tag);
      if (w == 0) w = tag;
    }
    if (w != tag) continue;
    uint64_t old = load_relaxed(slot + 1);
    while (true) {  // one more row, and this row first in the chain
      const uint64_t seen = atomic_cas(slot + 1, old, (((old >> 32) + 1) << 32) | (uint64_t)(row + 1));
      if (seen == old) break;
      old = seen;
    }
    join_chain(table, mask)[row] = (uint32_t)old;
    return true;
  }
  return false;
}

// How many build rows share the hash of `row`'s key, counted once (by the row its slot
// names; 0 for the others): the build's measure of the most rows one probe row can match.
// Keys sharing a hash count together, which only overstates it.
XPU_FN int64_t join_count(const uint64_t* table, uint64_t mask, uint64_t hash, int64_t row) {
  const uint64_t tag = slot_tag(hash);
  uint64_t pos = (hash >> 7) & mask;
  for (uint64_t probes = 0; probes <= mask; ++probes, pos = (pos + 1) & mask) {
    const uint64_t* slot = table + 2 * pos;
    if (slot[0] == 0) return 0;
    if (slot[0] == tag) return (int64_t)(slot[1] & 0xFFFFFFFFull) == row + 1 ? (int64_t)(slot[1] >> 32) : 0;
  }
  return 0;
}

// Walks the build rows whose tag matches a probe key's hash; the caller compares keys.
// The table and its mask are the kernel's parameters and are passed to next() again rather
// than kept in the walker: nested probes would otherwise hold them all in registers. For the
// same reason a walker is four 32-bit words: a 32-bit position (join tables have at most 2^32
// slots), and the tag's low half with bit 1 set (a false match only costs a key comparison),
// whose bit 0 says the row is the last of its slot's chain; tag 0 is a direct-mapped probe,
// whose row has the key. A slot's chain is walked first, then the slots after it up to an
// empty one. A key entered once is read from its slot alone, as before chains existed.
struct JoinProbe {
  int64_t row;
  uint32_t pos;
  uint32_t tag;
  XPU_METHOD bool exact() const { return tag == 0; }
  XPU_METHOD void advance(const uint64_t* table, uint64_t mask) {
    if (tag == 0) { row = -1; return; }  // direct maps hold one row per key
    if (row >= 0 && !(tag & 1)) {
      const uint32_t earlier = join_chain(table, mask)[row];
      if (earlier != 0) { row = (int64_t)earlier - 1; return; }
    }
    const uint32_t want = tag | 1;
    while (true) {
      const uint64_t* slot = table + 2 * (uint64_t)pos;
      uint64_t w = slot[0];
      pos = (uint32_t)((pos + 1) & mask);
      if (w == 0) { row = -1; return; }
      if (((uint32_t)w | 2) == want) {
        const uint64_t entry = slot[1];
        row = (int64_t)(entry & 0xFFFFFFFFull) - 1;
        tag = (entry >> 32) > 1 ? want & ~1u : want;
        return;
      }
    }
  }
  XPU_METHOD bool valid() const { return row >= 0; }
  XPU_METHOD void next(const uint64_t* table, uint64_t mask) { advance(table, mask); }
};

XPU_FN JoinProbe join_probe(const uint64_t* table, uint64_t mask, uint64_t hash) {
  JoinProbe p;
  p.tag = (uint32_t)slot_tag(hash) | 3;
  p.pos = (uint32_t)((hash >> 7) & mask);
  p.row = -1;
  if (table != nullptr) p.advance(table, mask);
  return p;
}

// Build sides whose single integer key is unique and dense get a direct map too: the row
// of key k is direct[k - lo] - 1 (0: none, so a map starts as zeroed memory), one read
// instead of a hash-table probe. After the map's `range` words lies a bitmap of the keys
// present (exec/join_state.direct_map): whoever enters a row sets its bit, and a probe that only asks
// whether a key is there reads the bit, from an array 32 times smaller than the map, which
// stays in the SM's cache where the map would not.
XPU_FN JoinProbe direct_probe(const int32_t* direct, int64_t lo, int64_t range, int64_t key) {
  JoinProbe p;
  p.tag = 0;
  p.pos = 0;
  int64_t k = key - lo;
  p.row = (k >= 0 && k < range) ? (int64_t)direct[k] - 1 : -1;
  return p;
}

XPU_FN void direct_mark(int32_t* direct, int64_t range, int64_t k) {
  atomic_or((uint32_t*)(direct + range) + (k >> 5), 1u << (k & 31));
}
XPU_FN bool direct_test(const int32_t* direct, int64_t lo, int64_t range, int64_t key) {
  const int64_t k = key - lo;
  return k >= 0 && k < range && ((load_readonly((const uint32_t*)(direct + range) + (k >> 5)) >> (k & 31)) & 1);
}

// A build pipeline entering its output row `row` under `key` in a direct map sized by an
// earlier run (0: empty). A NULL key, a key outside the range or one already present
// sets *failed, and the executor builds the join the ordinary way instead.
XPU_FN void direct_enter(int32_t* direct, int64_t lo, int64_t range, bool null, int64_t key, int64_t row,
                         uint64_t* failed) {
  const int64_t k = key - lo;
  if (null || k < 0 || k >= range || atomic_cas(&direct[k], (int32_t)0, (int32_t)(row + 1)) != 0)
    atomic_cas(failed, (uint64_t)0, (uint64_t)1);
  else
    direct_mark(direct, range, k);
}

// Visits every build row: the probe of a join without equality keys (a nested loop).
struct ScanProbe {
  int64_t rows;
  int64_t row;
  XPU_METHOD bool exact() const { return false; }
  XPU_METHOD bool valid() const { return row >= 0 && row < rows; }
  XPU_METHOD void next(const uint64_t*, uint64_t) { ++row; }
};
XPU_FN ScanProbe scan_probe(int64_t rows) {
  ScanProbe p;
  p.rows = rows;
  p.row = 0;
  return p;
}

// Arena records of text values that tables keep: [int32 length][bytes], 8-byte aligned.
// Record 0 is what a failed store leaves behind; it reads as empty text (the batch that
// failed is redone, so what it matched does not matter).
XPU_FN StrView arena_text(uint64_t record) {
  if (record == 0) return make_str(nullptr, 0);
  const uint8_t* p = (const uint8_t*)record;
  return make_str(p + 4, *(const int32_t*)p);
}
// Room in the arena for the record of a text of `len` bytes: its offset, or -1 (and
// ERR_TABLE_FULL) when the arena is full.
XPU_FN int64_t arena_claim(uint64_t* cursor, uint64_t capacity, int32_t len, int32_t* err) {
  const uint64_t size = (4 + (uint64_t)len + 7) & ~(uint64_t)7;
  const uint64_t at = atomic_add(cursor, size);
  if (at + size > capacity) { raise(err, ERR_TABLE_FULL); return -1; }
  return (int64_t)at;
}
template <class S>
XPU_FN uint64_t arena_store(uint8_t* arena, uint64_t* cursor, uint64_t capacity, const S& s, int32_t* err) {
  const int64_t at = arena_claim(cursor, capacity, s.len(), err);
  if (at < 0) return 0;
  *(int32_t*)(arena + at) = s.len();
  copy_to(arena + at + 4, s);
  return (uint64_t)(arena + at);
}

// A text group key. Columns the column cache dictionary-encoded carry, per dictionary
// entry, an arena-style record of its text and the text's hash_str: such a key is the
// record's address, so a row's group is found without reading or hashing its text. Other
// columns give the text itself, stored in the arena when its group is new. Either way the
// hash is hash_str(text), and keys compare equal by address first, else by text, so both
// kinds of key meet in one table.
struct KeyText {
  StrView text;     // the text, when there is no record
  uint64_t record;  // address of the text's dictionary record, or 0
  uint64_t hash;
};
XPU_FN KeyText key_text(const int32_t* values, const uint8_t* data, const int32_t* dict_offsets,
                        const uint8_t* dict_data, const uint64_t* dict_records, const uint64_t* dict_hashes,
                        int64_t i) {
  KeyText k;
  if (dict_records != nullptr) {
    const int32_t code = values[i];
    k.text = make_str(nullptr, 0);
    k.record = dict_records[code];
    k.hash = dict_hashes[code];
  } else {
    k.text = text_at(values, data, dict_offsets, dict_data, i);
    k.record = 0;
    k.hash = hash_str(k.text);
  }
  return k;
}
XPU_FN bool key_text_eq(uint64_t word, const KeyText& k) {
  if (k.record != 0) return word == k.record || str_eq(arena_text(word), arena_text(k.record));
  return str_eq(arena_text(word), k.text);
}
// The table word of a new group's text key. A record stays where it is, but its size still
// counts against the arena, which bounds the text the finaliser copies out.
XPU_FN uint64_t key_text_store(uint8_t* arena, uint64_t* cursor, uint64_t capacity, const KeyText& k,
                               int32_t* err) {
  if (k.record == 0) return arena_store(arena, cursor, capacity, k.text, err);
  return arena_claim(cursor, capacity, arena_text(k.record).len(), err) < 0 ? 0 : k.record;
}

// Moves the occupied slots of a table into a larger one (keys are distinct already).
XPU_FN void rehash_slot(const uint64_t* old_slot, uint64_t* table, uint64_t mask, int32_t width) {
  uint64_t tag = old_slot[0];
  uint64_t pos = (tag >> 7) & mask;
  while (true) {
    uint64_t* slot = table + pos * (uint64_t)width;
    if (atomic_cas(slot, 0, SLOT_BUSY) == 0) {
      for (int32_t k = 1; k < width; ++k) slot[k] = old_slot[k];
      store_release(slot, tag);
      return;
    }
    pos = (pos + 1) & mask;
  }
}

}  // namespace xpu
