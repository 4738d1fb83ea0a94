//! The hash fixture: a fake hash candidate in the ICCS CryptHash shape written for this
//! project (`tests/fixture/hash_body.c`: SHA-256 over bit-length messages, with fault
//! switches), its Rust model (the expected KAT digests come from here, never from
//! running the C code), and the archive and manifests a test gives the tool.
//!
//! The model hashes byte-aligned messages with the `sha2` crate's `Sha256` and the other
//! lengths with a model of the FIPS 180-4 padding over `sha2::compress256`; the DRNG is
//! the KEM fixture's (`fixture::Drng`: [`absorb`], [`squeeze`]) with the bit-count masking of `tests/fixture/hash_drng.c`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use sha2::digest::generic_array::GenericArray;
use sha2::digest::DynDigest;
use sha2::{Digest, Sha256, Sha512};

use super::fixture::{absorb, hex, squeeze, zip_tree};
use super::sha256;

pub const ID: &str = "fixture-hash";
pub const WRAP: &str = "Hash Fixture";
pub const ROOT: &str = "Implementations/Reference_Implementation";
const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixture");

/// The four KAT files of the ICCS hash driver.
pub const PARTS: [&str; 4] = ["2_12", "2_23", "2_33", "Loop"];
/// Iterations of the Loop file.
pub const LOOP_ROUNDS: usize = 1_000_000;
/// Records of the 2_12 file: bit lengths 0..=4096.
pub const SHORT_MAX_BITS: u64 = 4096;

// ---- the DRNG model -------------------------------------------------------------

/// The fixture DRNG as `hash_drng.c` has it: any bit count, the last byte masked to its
/// high (bits mod 8) bits, 0 bits drawing nothing. The state and its stream are the KEM
/// fixture's ([`absorb`], [`squeeze`]); long draws take [`fill`], the same stream faster.
pub struct BitDrng(u64);

impl BitDrng {
    pub fn new(seed: &[u8]) -> BitDrng {
        BitDrng(absorb(0xcbf29ce484222325, seed))
    }

    /// `get_random_number(ctx, buf, bits)`: ceil(bits/8) bytes.
    pub fn get_bits(&mut self, bits: u64) -> Vec<u8> {
        let mut out = squeeze(&mut self.0, bits.div_ceil(8) as usize);
        mask_tail(&mut out, bits);
        out
    }

    /// Whole bytes from the same stream (one call of `get_random_number` for `8 n` bits
    /// may be modelled as several of these: the stream does not care how it is cut).
    pub fn get_bytes(&mut self, n: usize) -> Vec<u8> {
        squeeze(&mut self.0, n)
    }

    /// As [`BitDrng::get_bytes`] into `out`, by [`fill`].
    pub fn fill_bytes(&mut self, out: &mut [u8]) {
        fill(&mut self.0, out);
    }
}

/// [`squeeze`] into a slice, written as an indexed loop: the test crate is built at
/// opt-level 1, where the iterators of `squeeze` (or `iter_mut`) cost 5 to 9 ns a byte
/// (9 s for the 1 GiB of 2_33) and this loop about 1.5. The tests check that the two give
/// the same stream.
pub fn fill(s: &mut u64, out: &mut [u8]) {
    let mut x = *s;
    let mut i = 0;
    while i < out.len() {
        x = x.wrapping_add(0x9E3779B97F4A7C15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
        out[i] = (z ^ (z >> 31)) as u8;
        i += 1;
    }
    *s = x;
}

/// Keep only the high (bits mod 8) bits of the last byte of a `bits`-bit message.
pub fn mask_tail(msg: &mut [u8], bits: u64) {
    let rem = (bits % 8) as u32;
    if rem != 0 {
        let last = (bits / 8) as usize;
        msg[last] &= 0xFFu8 << (8 - rem);
    }
}

/// The seed of one KAT file: its 8-byte tag ("KAT_2_12", ...) repeated 8 times.
pub fn seed(part: &str) -> Vec<u8> {
    let tag = format!("KAT_{part}");
    assert_eq!(tag.len(), 8, "{part}");
    tag.as_bytes().repeat(8)
}

// ---- SHA-256 over bit strings -----------------------------------------------------

const H0: [u32; 8] = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];

/// SHA-256 of the first `bits` bits of `msg` (ceil(bits/8) bytes are read; the bits of
/// the last byte below the message are ignored).
pub fn sha256_bits(msg: &[u8], bits: u64) -> [u8; 32] {
    if bits.is_multiple_of(8) {
        Sha256::digest(&msg[..(bits / 8) as usize]).into()
    } else {
        sha256_padded(msg, bits)
    }
}

/// The FIPS 180-4 padding, modelled here, over the crate's compression function: the
/// message bits, one 1 bit, zeros up to 448 mod 512, the 64-bit big-endian bit length.
/// Any length (byte-aligned ones too: the tests compare it with `Sha256` there).
pub fn sha256_padded(msg: &[u8], bits: u64) -> [u8; 32] {
    let full = (bits / 8) as usize;
    let rem = (bits % 8) as u32;
    let mut state = H0;
    let whole = full / 64 * 64;
    let blocks: Vec<GenericArray<u8, _>> = msg[..whole].chunks_exact(64).map(GenericArray::clone_from_slice).collect();
    sha2::compress256(&mut state, &blocks);
    let mut tail = msg[whole..full].to_vec();
    tail.push(if rem == 0 { 0x80 } else { (msg[full] & (0xFFu8 << (8 - rem))) | (0x80u8 >> rem) });
    while tail.len() % 64 != 56 {
        tail.push(0);
    }
    tail.extend_from_slice(&bits.to_be_bytes());
    let blocks: Vec<GenericArray<u8, _>> = tail.chunks_exact(64).map(GenericArray::clone_from_slice).collect();
    sha2::compress256(&mut state, &blocks);
    let mut out = [0u8; 32];
    for (o, w) in out.chunks_exact_mut(4).zip(state) {
        o.copy_from_slice(&w.to_be_bytes());
    }
    out
}

/// SHA-512 of the first `bits` bits: the same padding with 1024-bit blocks and a 128-bit
/// length, over `sha2::compress512` (the hash baselines take bit lengths too).
pub fn sha512_bits(msg: &[u8], bits: u64) -> Vec<u8> {
    const H0: [u64; 8] = [
        0x6a09e667f3bcc908,
        0xbb67ae8584caa73b,
        0x3c6ef372fe94f82b,
        0xa54ff53a5f1d36f1,
        0x510e527fade682d1,
        0x9b05688c2b3e6c1f,
        0x1f83d9abfb41bd6b,
        0x5be0cd19137e2179,
    ];
    if bits.is_multiple_of(8) {
        return Sha512::digest(&msg[..(bits / 8) as usize]).to_vec();
    }
    let (full, rem) = ((bits / 8) as usize, (bits % 8) as u32);
    let mut state = H0;
    let whole = full / 128 * 128;
    let blocks: Vec<GenericArray<u8, _>> = msg[..whole].chunks_exact(128).map(GenericArray::clone_from_slice).collect();
    sha2::compress512(&mut state, &blocks);
    let mut tail = msg[whole..full].to_vec();
    tail.push((msg[full] & (0xFFu8 << (8 - rem))) | (0x80u8 >> rem));
    while tail.len() % 128 != 112 {
        tail.push(0);
    }
    tail.extend_from_slice(&u128::from(bits).to_be_bytes());
    let blocks: Vec<GenericArray<u8, _>> = tail.chunks_exact(128).map(GenericArray::clone_from_slice).collect();
    sha2::compress512(&mut state, &blocks);
    state.iter().flat_map(|w| w.to_be_bytes()).collect()
}

/// A hash function the model computes: the fixture's (SHA-256) and the baselines'.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algo {
    Sha256,
    Sha512,
    Sha3_256,
    Sha3_512,
    /// The fixture's extendable-output mode (`FIX_XOF`) at one output length in bits:
    /// h = SHA-256 of the message, then h, SHA-256(h || 1), SHA-256(h || 2), ... cut.
    Sha256Xof(u32),
}

impl Algo {
    pub fn bits(self) -> u32 {
        match self {
            Algo::Sha256 | Algo::Sha3_256 => 256,
            Algo::Sha512 | Algo::Sha3_512 => 512,
            Algo::Sha256Xof(bits) => bits,
        }
    }

    fn hasher(self) -> Box<dyn DynDigest + Send> {
        match self {
            Algo::Sha256 | Algo::Sha256Xof(_) => Box::new(Sha256::new()),
            Algo::Sha512 => Box::new(Sha512::new()),
            Algo::Sha3_256 => Box::new(sha3::Sha3_256::new()),
            Algo::Sha3_512 => Box::new(sha3::Sha3_512::new()),
        }
    }

    /// The digest of the first `bits` bits (SHA-3: whole bytes only).
    pub fn digest_bits(self, msg: &[u8], bits: u64) -> Vec<u8> {
        match self {
            Algo::Sha256 | Algo::Sha256Xof(_) => self.expand(sha256_bits(msg, bits).to_vec()),
            Algo::Sha512 => sha512_bits(msg, bits),
            _ => {
                assert!(bits.is_multiple_of(8), "{self:?} takes whole bytes");
                self.digest(&msg[..(bits / 8) as usize])
            }
        }
    }

    pub fn digest(self, msg: &[u8]) -> Vec<u8> {
        let mut h = self.hasher();
        h.update(msg);
        self.expand(h.finalize().to_vec())
    }

    /// The XOF's output from its SHA-256 `h`; the others' digest as it is.
    fn expand(self, h: Vec<u8>) -> Vec<u8> {
        let Algo::Sha256Xof(bits) = self else { return h };
        let bytes = (bits / 8) as usize;
        let mut out = h.clone();
        for i in 1u8.. {
            if out.len() >= bytes {
                break;
            }
            let mut block = h.clone();
            block.push(i);
            out.extend_from_slice(&Sha256::digest(&block));
        }
        out.truncate(bytes);
        out
    }
}

/// A byte-aligned message fed in pieces to one of the [`Algo`]s (the 1 GiB messages of
/// 2_33 are never held whole). Keeps the first and last 8 bytes for the driver's
/// `Msg_Exp` line.
pub struct ByteStream {
    hash: Box<dyn DynDigest + Send>,
    len: u64,
    head: Vec<u8>,
    last: [u8; 8],
}

impl Default for ByteStream {
    fn default() -> Self {
        ByteStream::of(Algo::Sha256)
    }
}

impl ByteStream {
    pub fn new() -> ByteStream {
        ByteStream::default()
    }

    pub fn of(algo: Algo) -> ByteStream {
        ByteStream { hash: algo.hasher(), len: 0, head: Vec::new(), last: [0; 8] }
    }

    pub fn update(&mut self, bytes: &[u8]) {
        self.hash.update(bytes);
        if self.head.len() < 8 {
            let take = (8 - self.head.len()).min(bytes.len());
            self.head.extend_from_slice(&bytes[..take]);
        }
        // The last 8 bytes so far: the old ones shifted by what came in.
        let n = bytes.len().min(8);
        self.last.copy_within(n.., 0);
        self.last[8 - n..].copy_from_slice(&bytes[bytes.len() - n..]);
        self.len += bytes.len() as u64;
    }

    /// Bytes fed so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// (digest, first 8 bytes, last 8 bytes); the message must have 8 bytes or more.
    pub fn finish(self) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
        assert!(self.len >= 8);
        (self.hash.finalize().to_vec(), self.head, self.last.to_vec())
    }
}

// ---- the KAT texts -----------------------------------------------------------------

/// One of the three records of 2_23 / 2_33.
enum Big {
    Zeros,
    Ones,
    Random,
}

/// Digest and ends of one long message of `bytes` bytes (a multiple of 1 MiB).
fn big_message(algo: Algo, kind: &Big, bytes: u64, drng: Option<&mut BitDrng>) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    const CHUNK: u64 = 1 << 20;
    assert_eq!(bytes % CHUNK, 0);
    let mut s = ByteStream::of(algo);
    match (kind, drng) {
        (Big::Zeros | Big::Ones, _) => {
            let chunk = vec![if matches!(kind, Big::Zeros) { 0u8 } else { 0xFF }; CHUNK as usize];
            for _ in 0..bytes / CHUNK {
                s.update(&chunk);
            }
        }
        (Big::Random, Some(d)) => {
            // One get_random_number of 8 * bytes bits, drawn in chunks (the same stream):
            // a second thread draws the next chunk while this one hashes; three buffers
            // go round.
            let (full_tx, full_rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(3);
            let (empty_tx, empty_rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(3);
            for _ in 0..3 {
                empty_tx.send(vec![0u8; CHUNK as usize]).unwrap();
            }
            std::thread::scope(|sc| {
                sc.spawn(move || {
                    for _ in 0..bytes / CHUNK {
                        let mut buf = empty_rx.recv().unwrap();
                        d.fill_bytes(&mut buf);
                        full_tx.send(buf).unwrap();
                    }
                });
                for buf in full_rx {
                    s.update(&buf);
                    let _ = empty_tx.send(buf); // the drawer may be done
                }
            });
        }
        (Big::Random, None) => unreachable!(),
    }
    assert_eq!(s.len(), bytes);
    let (h, head, last) = s.finish();
    (algo.expand(h), head, last)
}

/// Calls `out` with the driver's text of one KAT file, record by record (each record's
/// lines with their LF, then the empty line). `dbits` must be 256: the fixture's correct
/// algorithm has no other width.
pub fn kat_records(part: &str, dbits: u32, out: &mut dyn FnMut(&str)) {
    assert_eq!(dbits, 256, "the fixture's CryptHash only computes 256-bit digests");
    kat_records_of(part, Algo::Sha256, out);
}

/// [`kat_records`] of any [`Algo`] at its own width.
pub fn kat_records_of(part: &str, algo: Algo, out: &mut dyn FnMut(&str)) {
    let dbits = algo.bits();
    let d = (dbits / 8) as usize;
    let seed = seed(part);
    let mut drng = BitDrng::new(&seed);
    match part {
        "2_12" => {
            for bits in 0..=SHORT_MAX_BITS {
                let mut buf = vec![0u8; 512];
                let m = drng.get_bits(bits);
                buf[..m.len()].copy_from_slice(&m);
                let msg = &buf[..m.len()];
                let h = algo.digest_bits(msg, bits);
                out(&format!("Msg_Len = {bits}\nMsg = {}\nDst_Len = {dbits}\nDst = {}\n\n", hex(msg), hex(&h[..d])));
            }
        }
        "2_23" | "2_33" => {
            let log2: u32 = part[2..].parse().unwrap();
            let bits = 1u64 << log2;
            let bytes = bits / 8;
            // The three digests at once (2 cores: the zeros and ones share one thread,
            // the random message has the DRNG in a thread of its own).
            let (plain, random) = std::thread::scope(|sc| {
                let plain = sc.spawn(move || {
                    [big_message(algo, &Big::Zeros, bytes, None), big_message(algo, &Big::Ones, bytes, None)]
                });
                let random = big_message(algo, &Big::Random, bytes, Some(&mut drng));
                (plain.join().unwrap(), random)
            });
            let [zeros, ones] = plain;
            for ((h, head, last), msg_seed) in [(zeros, ""), (ones, ""), (random, hex(&seed).as_str())] {
                out(&format!(
                    "Msg_Len = {bits}\nMsg_Seed = {msg_seed}\nMsg_Exp = {} .... {}\nDst_Len = {dbits}\nDst = {}\n\n",
                    hex(&head),
                    hex(&last),
                    hex(&h[..d])
                ));
            }
        }
        "Loop" => {
            let mut m = drng.get_bits(8192);
            out(&format!("Msg_Len = 8192\nMsg = {}\n", hex(&m)));
            let h = loop_digest_of(algo, &mut m, LOOP_ROUNDS);
            out(&format!("Dst_Len = {dbits}\nDst = {}\n\n", hex(&h[..d])));
        }
        other => panic!("no KAT part {other:?} (2_12, 2_23, 2_33, Loop)"),
    }
}

/// The Loop: h = H(m), then `rounds` times: m rotated left by `d` bytes, its first `d`
/// bytes XORed with h, h = H(m). Returns the last h.
pub fn loop_digest(m: &mut [u8], d: usize, rounds: usize) -> [u8; 32] {
    assert_eq!(d, 32, "the fixture's width");
    loop_digest_of(Algo::Sha256, m, rounds).try_into().unwrap()
}

/// [`loop_digest`] of any [`Algo`], rotating by its own width.
pub fn loop_digest_of(algo: Algo, m: &mut [u8], rounds: usize) -> Vec<u8> {
    let d = (algo.bits() / 8) as usize;
    let mut h = algo.digest(m);
    for _ in 0..rounds {
        m.rotate_left(d);
        for (x, y) in m[..d].iter_mut().zip(&h) {
            *x ^= y;
        }
        h = algo.digest(m);
    }
    h
}

/// The driver's text of one KAT file (2_33 takes as long as [`kat_digest`]).
pub fn kat_text(part: &str, dbits: u32) -> String {
    let mut text = String::new();
    kat_records(part, dbits, &mut |r| text.push_str(r));
    text
}

/// The manifest's `strict` rule, written here on purpose: CR and trailing spaces and
/// tabs dropped from each line, empty lines dropped, LF after every kept line.
pub struct Strict {
    hash: Sha256,
    line: Vec<u8>,
}

impl Default for Strict {
    fn default() -> Self {
        Strict::new()
    }
}

impl Strict {
    pub fn new() -> Strict {
        Strict { hash: Sha256::new(), line: Vec::new() }
    }

    pub fn update(&mut self, text: &[u8]) {
        for &b in text {
            if b == b'\n' {
                self.end_line();
            } else if b != b'\r' {
                self.line.push(b);
            }
        }
    }

    fn end_line(&mut self) {
        while matches!(self.line.last(), Some(b' ' | b'\t')) {
            self.line.pop();
        }
        if !self.line.is_empty() {
            Digest::update(&mut self.hash, &self.line);
            Digest::update(&mut self.hash, b"\n");
        }
        self.line.clear();
    }

    /// Lower-case hex SHA-256 of the canonical text.
    pub fn finish(mut self) -> String {
        self.end_line();
        self.hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// The canonical (`strict`) digest of a text.
pub fn strict_digest(text: &[u8]) -> String {
    let mut s = Strict::new();
    s.update(text);
    s.finish()
}

/// The `strict` digest of the model's text of one KAT file, computed once per process
/// and width.
pub fn kat_digest(part: &str, dbits: u32) -> String {
    static DONE: OnceLock<std::sync::Mutex<Vec<(String, u32, String)>>> = OnceLock::new();
    let done = DONE.get_or_init(Default::default);
    if let Some((_, _, d)) = done.lock().unwrap().iter().find(|(p, b, _)| p == part && *b == dbits) {
        return d.clone();
    }
    let mut s = Strict::new();
    kat_records(part, dbits, &mut |r| s.update(r.as_bytes()));
    let digest = s.finish();
    done.lock().unwrap().push((part.to_owned(), dbits, digest.clone()));
    digest
}

// ---- the fixture archive -------------------------------------------------------------

/// One instance: (label, header macros, manifest `digest_bits`, manifest `timeout`).
pub type HashInst = (&'static str, &'static str, u32, Option<u32>);

pub const INSTANCES: &[HashInst] = &[
    ("h-good", "", 256, None),
    ("h-tweak", "#define FIX_TWEAK_BITS 1001\n", 256, None),
    ("h-fail", "#define FIX_FAIL_BITS 2049\n", 256, None),
    ("h-overrun", "#define FIX_OVERRUN_BITS 777\n", 256, None),
    ("h-overread", "#define FIX_OVERREAD 1\n", 256, None),
    ("h-slowloop", "#define FIX_SLOW_LOOP 1\n", 256, Some(8)),
    ("h-cache", "#define FIX_CACHE 1\n", 256, None),
    ("h-width", "#define FIX_ANY_WIDTH 1\n", 512, None),
    ("h-content", "#define FIX_CONTENT 1\n", 256, None),
];

/// `CryptHash_<label>.h`: the ICCS hash API header of one instance.
pub fn header(label: &str, macros: &str, digest_bits: u32) -> String {
    format!(
        "#ifndef CRYPTHASH_FIXTURE_H\n#define CRYPTHASH_FIXTURE_H\n#define ALGORITHM_INSTANCE \"{label}\"\n\
         #define DIGEST_BIT_LENGTH {digest_bits}\n#define OUTPUT_BLANK_TEST_VECTORS 0\n#include \"drng.h\"\n{macros}\
         int CryptHash(int digest_len_bits, const unsigned char *msg, unsigned long long msg_len_bits, \
         unsigned char *digest);\n#endif\n"
    )
}

/// Write the extracted tree of the fixture under `dir`; returns its source root.
pub fn write_tree(dir: &Path, instances: &[HashInst]) -> PathBuf {
    let root = dir.join(WRAP).join(ROOT);
    let body = std::fs::read_to_string(Path::new(FIXTURE).join("hash_body.c")).unwrap();
    for (label, macros, digest_bits, _) in instances {
        let d = root.join(label);
        std::fs::create_dir_all(&d).unwrap();
        for f in ["drng.h", "mix.h"] {
            std::fs::copy(Path::new(FIXTURE).join(f), d.join(f)).unwrap();
        }
        std::fs::copy(Path::new(FIXTURE).join("hash_drng.c"), d.join("drng.c")).unwrap();
        std::fs::write(d.join(format!("CryptHash_{label}.h")), header(label, macros, *digest_bits)).unwrap();
        std::fs::write(d.join(format!("CryptHash_{label}.c")), format!("#include \"CryptHash_{label}.h\"\n{body}"))
            .unwrap();
        std::fs::write(d.join("KAT_CryptHash.c"), "#error the shipped KAT generator must never be compiled\n").unwrap();
    }
    root
}

/// The fixture's tree and archive under `dir`: (source root, archive).
pub fn write_archive(dir: &Path, instances: &[HashInst]) -> (PathBuf, PathBuf) {
    let root = write_tree(&dir.join("tree"), instances);
    let zip = dir.join(format!("{WRAP}.zip"));
    zip_tree(&dir.join("tree"), &zip);
    (root, zip)
}

pub fn manifest(zip: &Path, instances: &[HashInst]) -> String {
    let (bytes, sha) = (std::fs::metadata(zip).unwrap().len(), sha256(&std::fs::read(zip).unwrap()));
    let mut m = format!(
        r#"id = "{ID}"
name = "Hash fixture (test)"
family = "hash"

[source]
kind = "archive"
file = "{WRAP}.zip"
bytes = {bytes}
sha256 = "{sha}"
root = "{ROOT}"

[build]
sources = ["{{dir}}/CryptHash_{{label}}.c", "{{dir}}/drng.c"]
include = ["{{dir}}"]

[kat]
program = ["driver:iccs_hash_kat.c"]
api_header = "{{dir}}/CryptHash_{{label}}.h"
file = "{{label}}.txt"

[bench]
api = "iccs"
header = "{{dir}}/CryptHash_{{label}}.h"
"#
    );
    for (label, _, digest_bits, timeout) in instances {
        m.push_str(&format!("\n[[instance]]\nlabel = \"{label}\"\ndir = \"{label}\"\ndigest_bits = {digest_bits}\n"));
        if let Some(t) = timeout {
            m.push_str(&format!("timeout = {t}\n"));
        }
    }
    m
}

/// The model's correct digests of the four files, for every instance (the faulty ones
/// must not match them; h-width's are the 256-bit ones too).
pub fn kat_manifest(instances: &[HashInst]) -> String {
    // The four at once: the Loop (one thread) beside 2_33 (about 4 s, three threads).
    let digests: Vec<(&str, String)> = std::thread::scope(|sc| {
        let all: Vec<_> = PARTS.iter().map(|p| (*p, sc.spawn(move || kat_digest(p, 256)))).collect();
        all.into_iter().map(|(p, h)| (p, h.join().unwrap())).collect()
    });
    let mut k = String::from("# derived from the Rust model in tests/common/hash_fixture.rs\n");
    for (label, _, _, _) in instances {
        for (part, d) in &digests {
            k.push_str(&format!("{d} strict {label}/KAT_{part}_{label}.txt\n"));
        }
    }
    k
}

/// A manifest folder: `<dir>/fixture-hash.toml`, `<dir>/fixture-hash/kat.sha256`.
pub fn manifest_dir(dir: &Path, zip: &Path, instances: &[HashInst]) -> PathBuf {
    std::fs::create_dir_all(dir.join(ID)).unwrap();
    std::fs::write(dir.join(format!("{ID}.toml")), manifest(zip, instances)).unwrap();
    std::fs::write(dir.join(ID).join("kat.sha256"), kat_manifest(instances)).unwrap();
    dir.join(format!("{ID}.toml"))
}

/// Everything a test hands the tool: a temporary folder with the archive, the manifest
/// folder and an evidence folder, as `field::Case`.
pub struct Case {
    pub tmp: tempfile::TempDir,
    pub root: PathBuf,
    pub manifest: PathBuf,
    pub zip: PathBuf,
    pub out: PathBuf,
}

impl Case {
    pub fn new() -> Case {
        Case::with(INSTANCES)
    }

    pub fn with(instances: &[HashInst]) -> Case {
        let tmp = tempfile::tempdir().unwrap();
        let (root, zip) = write_archive(tmp.path(), instances);
        let manifest = manifest_dir(&tmp.path().join("manifests"), &zip, instances);
        let out = tmp.path().join("out");
        Case { root, manifest, zip, out, tmp }
    }

    /// `xtask verify <manifest> --engine podman --archive fixture-hash=<zip> --out <out> extra...`
    pub fn verify(&self, extra: &[&str]) -> Output {
        let archive = format!("{ID}={}", self.zip.display());
        let mut args = vec!["verify", self.manifest.to_str().unwrap(), "--engine", "podman"];
        args.extend(["--archive", &archive, "--out", self.out.to_str().unwrap()]);
        args.extend(extra);
        super::require_podman();
        let out = Command::new(env!("CARGO_BIN_EXE_xtask")).args(&args).output().unwrap();
        eprintln!("$ xtask {}\n{}{}", args.join(" "), super::stdout(&out), String::from_utf8_lossy(&out.stderr));
        out
    }
}
