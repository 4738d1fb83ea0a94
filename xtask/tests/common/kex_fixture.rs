//! The key-exchange fixture: a toy exchange in the ICCS KEX shape written for this
//! project (`tests/fixture/kex_body.c`), its Rust model (expected digests come from
//! here, never from running the C code), and the archive and manifests a test gives the
//! tool. The model reuses the KEM fixture's DRNG and hash ([`Drng`], [`expand`]).

use std::path::{Path, PathBuf};

use super::fixture::{expand, hex, zip_tree, Drng, FIXTURE, ICCS_GROUPS, ROOT};
use super::sha256;

pub const ID: &str = "fixture-kex";
pub const WRAP: &str = "Fixture KEX v1";
const HASH: u64 = 0x4841;
const XOF: u64 = 0x584f;
/// Bytes of a long-term key (`FIX_N`).
pub const N: usize = 32;
/// A state is e[E] || T[TR] || seen[1].
const E: usize = 32;
const TR: usize = 32;
const SEEN: usize = E + TR;
pub const ST: usize = SEEN + 1;
pub const SS: usize = 32;
pub const RECORDS: usize = 10;

// ---- the model ----------------------------------------------------------------

/// Bytes of message `k` (1-based).
pub fn msg_len(k: usize) -> usize {
    24 + 8 * k
}

/// `kex_get_total_msg_len_bytes()` of a `passes`-pass exchange.
pub fn total_msg_len(passes: usize) -> usize {
    (1..=passes).map(msg_len).sum()
}

fn h(parts: &[&[u8]]) -> Vec<u8> {
    expand(HASH, &parts.concat(), TR)
}

/// T = H("T" || T || m), seen += 1; without m's last byte when `deaf` (FIX_IGNORE_TAIL).
fn absorb(st: &mut [u8], m: &[u8], deaf: bool) {
    let m = if deaf { &m[..m.len().saturating_sub(1)] } else { m };
    let t = h(&[b"T", &st[E..SEEN], m]);
    st[E..SEEN].copy_from_slice(&t);
    st[SEEN] = st[SEEN].wrapping_add(1);
}

pub fn public(sk: &[u8]) -> Vec<u8> {
    h(&[b"P", sk])
}

/// One side's keys and state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Party {
    pub pk: Vec<u8>,
    pub sk: Vec<u8>,
    pub st: Vec<u8>,
}

/// init_a / init_b: sk, then e, from the algorithm DRNG; T = H("T"), seen = 0.
pub fn init(alg: &mut Drng) -> Party {
    let sk = alg.get(N);
    let e = alg.get(E);
    Party { pk: public(&sk), st: [e, h(&[b"T"]), vec![0]].concat(), sk }
}

/// The toy exchange as far as the model follows the C code's switches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Proto {
    /// `FIX_PASSES`.
    pub passes: usize,
    /// `FIX_UNSET`: the last pass writes no message and sets no length.
    pub unset: bool,
    /// `FIX_TWEAK`: both derives flip bit 0 of ss[0].
    pub tweak: bool,
    /// `FIX_IGNORE_TAIL`: both sides absorb every message without its last byte (the
    /// secrets agree; a bit flipped there in transit goes unread).
    pub ignore_tail: bool,
}

impl Proto {
    pub const fn plain(passes: usize) -> Proto {
        Proto { passes, unset: false, tweak: false, ignore_tail: false }
    }

    /// Pass `k` of the side with `sk` and `st`; `prev` is m_{k-1} as the driver passes
    /// it. None where the FIX_UNSET pass writes no message.
    pub fn pass(&self, k: usize, sk: &[u8], peer_pk: &[u8], prev: &[u8], st: &mut [u8]) -> Option<Vec<u8>> {
        if k > 1 {
            absorb(st, prev, self.ignore_tail);
        }
        if self.unset && k == self.passes {
            return None;
        }
        let m = expand(XOF, &[b"M".as_slice(), &[k as u8], sk, peer_pk, &st[..SEEN]].concat(), msg_len(k));
        absorb(st, &m, self.ignore_tail);
        Some(m)
    }

    /// ss from a copy of `st` and the peer's last message `m`.
    pub fn derive(&self, st: &[u8], m: &[u8], pka: &[u8], pkb: &[u8]) -> Vec<u8> {
        let mut st = st.to_vec();
        if usize::from(st[SEEN]) < self.passes && !m.is_empty() && !self.unset {
            absorb(&mut st, m, self.ignore_tail);
        }
        let mut ss = h(&[b"K", &st[E..SEEN], pka, pkb]);
        if self.tweak {
            ss[0] ^= 1;
        }
        ss
    }
}

/// One KAT_KEX record; every byte string as printed (its carried length's bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub seed: Vec<u8>,
    pub a: Party,
    pub b: Party,
    /// Per pass k = 1..P: the sender's state and the message.
    pub passes: Vec<(Vec<u8>, Vec<u8>)>,
    pub ssa: Vec<u8>,
    pub ssb: Vec<u8>,
}

fn repeat(text: &[u8], n: usize) -> Vec<u8> {
    text.iter().copied().cycle().take(n).collect()
}

/// The message buffers and length variables of the driver, carried over all records:
/// message lengths start at 0, state lengths at the getters' values.
struct Carried {
    bufs: Vec<Vec<u8>>,
    m_len: Vec<usize>,
    st_len: [usize; 2],
}

impl Carried {
    /// Message k as the driver holds it: its buffer's first `m_len[k]` bytes.
    fn msg(&self, k: usize) -> Vec<u8> {
        self.bufs[k][..self.m_len[k]].to_vec()
    }

    /// The last message of the side that sends passes of parity `odd` (empty if none).
    fn last_of(&self, odd: bool, passes: usize) -> Vec<u8> {
        (1..=passes).rev().find(|k| (k % 2 == 1) == odd).map_or_else(Vec::new, |k| self.msg(k))
    }
}

/// The passes of one record: (state, message) per pass as printed.
fn exchange(p: &Proto, a: &mut Party, b: &mut Party, c: &mut Carried) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    for k in 1..=p.passes {
        let side = (k + 1) % 2; // 0: A sends odd passes, 1: B even ones
        let peer_pk = if side == 0 { b.pk.clone() } else { a.pk.clone() };
        let me = if side == 0 { &mut *a } else { &mut *b };
        let prev = if k > 1 { c.msg(k - 1) } else { Vec::new() };
        if let Some(m) = p.pass(k, &me.sk, &peer_pk, &prev, &mut me.st) {
            (c.st_len[side], c.m_len[k]) = (ST, m.len());
            c.bufs[k] = m;
        }
        out.push((me.st[..c.st_len[side]].to_vec(), c.msg(k)));
    }
    out
}

/// The ten records of the official driver (facts §1, §5): the seed DRNG on "seed" x 16,
/// the algorithm DRNG seeded with the record's seed, init_a then init_b, passes 1..P,
/// derive_a with B's last message and derive_b with A's.
pub fn records(p: &Proto) -> Vec<Record> {
    let mut seeds = Drng::new(&repeat(b"seed", 64));
    let mut c = Carried { bufs: vec![Vec::new(); p.passes + 1], m_len: vec![0; p.passes + 1], st_len: [ST; 2] };
    (0..RECORDS)
        .map(|_| {
            let seed = seeds.get(64);
            let mut alg = Drng::new(&seed);
            let (mut a, mut b) = (init(&mut alg), init(&mut alg));
            c.st_len = [ST; 2];
            let (a0, b0) = (a.clone(), b.clone());
            let passes = exchange(p, &mut a, &mut b, &mut c);
            let ssa = p.derive(&a.st, &c.last_of(false, p.passes), &a.pk, &b.pk);
            let ssb = p.derive(&b.st, &c.last_of(true, p.passes), &a.pk, &b.pk);
            Record { seed, a: a0, b: b0, passes, ssa, ssb }
        })
        .collect()
}

/// The records as KAT_KEX lines, exactly as the driver prints them (an empty value
/// leaves "Name = "); `template`: OUTPUT_BLANK_TEST_VECTORS 1 (`Pass_Num` and every
/// length but `Seed_Len` print empty).
pub fn lines(recs: &[Record], template: bool) -> Vec<Vec<String>> {
    let value = |n: usize| if template { String::new() } else { n.to_string() };
    recs.iter()
        .enumerate()
        .map(|(i, r)| {
            let mut v = vec![
                format!("Count = {i}"),
                "Seed_Len = 64".into(),
                format!("Seed = {}", hex(&r.seed)),
                format!("Pass_Num = {}", value(r.passes.len())),
            ];
            let mut field = |name: &str, bytes: &[u8]| {
                v.push(format!("{name}_Len = {}", value(bytes.len())));
                v.push(format!("{name} = {}", hex(bytes)));
            };
            for (s, x) in [("a", &r.a), ("b", &r.b)] {
                field(&format!("PK{s}"), &x.pk);
                field(&format!("SK{s}"), &x.sk);
                field(&format!("Init_St{s}"), &x.st);
            }
            for (k, (st, m)) in (1..).zip(&r.passes) {
                field(&format!("Pass{k}_St{}", if k % 2 == 1 { "a" } else { "b" }), st);
                field(&format!("M{k}"), m);
            }
            field("SS", &r.ssa);
            v
        })
        .collect()
}

/// The KAT text as the official driver writes it (LF, a blank line after each record).
pub fn kat_text(p: &Proto, template: bool) -> String {
    let mut text = String::new();
    for rec in lines(&records(p), template) {
        for line in rec {
            text.push_str(&line);
            text.push('\n');
        }
        text.push('\n');
    }
    text
}

/// Digest under the `strict` rule (trimmed lines, no empty lines, LF after every line),
/// computed here on purpose rather than with the tool's own rule.
pub fn strict_digest(p: &Proto, template: bool) -> String {
    let mut text = String::new();
    for line in lines(&records(p), template).into_iter().flatten() {
        let line = line.trim_end();
        if !line.is_empty() {
            text.push_str(line);
            text.push('\n');
        }
    }
    sha256(text.as_bytes())
}

// ---- the instances -----------------------------------------------------------

/// What the exchange contract must say about an instance (the KAT status is separate).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Contract {
    /// Every pass and derive sets its lengths and stays within them.
    Holds,
    /// A call leaves an output length unset.
    Breach,
    /// Not asserted: the KAT already failed.
    Unchecked,
}

/// One fixture instance: what its C code computes, the defines of its header, the
/// passes its manifest declares and the verdicts it must get.
#[derive(Debug, Clone)]
pub struct KexInst {
    pub label: &'static str,
    /// What the C code computes, as far as the model follows it.
    pub proto: Proto,
    pub template: bool,
    /// Extra lines of `KEX_<label>.h` (the FIX_* switches).
    pub defines: &'static str,
    /// Expected KAT status.
    pub kat: &'static str,
    pub contract: Contract,
    /// `passes` of the manifest's `[[instance]]`.
    pub passes: usize,
}

impl KexInst {
    /// The exchange the published KAT text comes from: the honest one, except that an
    /// unset last pass is published as it really prints (as kex-02's text is).
    pub fn published(&self) -> Proto {
        Proto { tweak: false, ..self.proto }
    }
}

const fn inst(
    label: &'static str,
    proto: Proto,
    defines: &'static str,
    kat: &'static str,
    contract: Contract,
) -> KexInst {
    KexInst { label, proto, template: false, defines, kat, contract, passes: proto.passes }
}

/// Every instance of the fixture; no label is a substring of another (the tests find
/// an instance's line in the tool's output by its label).
pub fn instances() -> Vec<KexInst> {
    use Contract::*;
    let p2 = Proto::plain(2);
    vec![
        inst("kex-p0", Proto::plain(0), "", "PASS", Holds),
        inst("kex-p1", Proto::plain(1), "", "PASS", Holds),
        inst("kex-p2", p2, "", "PASS", Holds),
        inst("kex-p3", Proto::plain(3), "", "PASS", Holds),
        inst("kex-p4", Proto::plain(4), "", "PASS", Holds),
        KexInst { template: true, ..inst("kex-template", p2, "", "PASS", Holds) },
        inst("kex-tweak", Proto { tweak: true, ..p2 }, "#define FIX_TWEAK 1\n", "MISMATCH", Holds),
        // Both sides leave out each message's last byte: its text passes, and a bit
        // flipped there in transit leaves both secrets as they were (tampered passes fail).
        inst("kex-ignore", Proto { ignore_tail: true, ..p2 }, "#define FIX_IGNORE_TAIL 1\n", "PASS", Holds),
        // derive_b's 4th call of the process (record 3) flips ss[0]: the sides disagree.
        inst("kex-disagree", p2, "#define FIX_DISAGREE 1\n", "CRYPTOFAIL", Unchecked),
        // Pass 2 writes 32 bytes right past the message buffer (total_msg_len bytes).
        inst("kex-msgover", p2, "#define FIX_MSG_OVERRUN 1\n", "OVERFLOW", Unchecked),
        // As kex-02's pass 4: no message byte, neither length set; its text still passes.
        inst("kex-unset", Proto { unset: true, ..Proto::plain(4) }, "#define FIX_UNSET 1\n", "PASS", Breach),
        inst("kex-early", p2, "#define FIX_EARLY 1\n", "CRYPTOFAIL", Unchecked),
        inst("kex-never", Proto::plain(3), "#define FIX_NEVER 1\n", "CRYPTOFAIL", Unchecked),
        inst("kex-hugepass", p2, "#define FIX_HUGE_PASSES 1\n", "CRYPTOFAIL", Unchecked),
        inst("kex-drift", p2, "#define FIX_PASSES_DRIFT 1\n", "CRYPTOFAIL", Unchecked),
        inst("kex-deriveover", p2, "#define FIX_DERIVE_OVERRUN 1\n", "OVERFLOW", Unchecked),
        inst("kex-zerototal", p2, "#define FIX_ZERO_TOTAL 1\n", "OVERFLOW", Unchecked),
    ]
}

/// The instances named in `labels`, in that order (an unknown label panics).
pub fn subset(labels: &[&str]) -> Vec<KexInst> {
    let all = instances();
    labels
        .iter()
        .map(|l| all.iter().find(|i| i.label == *l).unwrap_or_else(|| panic!("no KEX instance {l}")).clone())
        .collect()
}

const PROTOTYPES: &str = "unsigned long long kex_get_passes_num(void);\n\
    unsigned long long kex_get_pk_len_bytes(void);\nunsigned long long kex_get_sk_len_bytes(void);\n\
    unsigned long long kex_get_sta_len_bytes(void);\nunsigned long long kex_get_stb_len_bytes(void);\n\
    unsigned long long kex_get_ss_len_bytes(void);\nunsigned long long kex_get_total_msg_len_bytes(void);\n\
    int kex_init_a(unsigned char *pka, unsigned long long *pka_len, unsigned char *ska, \
    unsigned long long *ska_len, unsigned char *sta, unsigned long long *sta_len);\n\
    int kex_init_b(unsigned char *pkb, unsigned long long *pkb_len, unsigned char *skb, \
    unsigned long long *skb_len, unsigned char *stb, unsigned long long *stb_len);\n\
    int kex_generate_pass1_msg_a(unsigned char *ska, unsigned long long ska_len, unsigned char *pkb, \
    unsigned long long pkb_len, unsigned char *sta, unsigned long long *sta_len, unsigned char *m1, \
    unsigned long long *m1_len);\n\
    int kex_generate_pass2_msg_b(unsigned char *skb, unsigned long long skb_len, unsigned char *pka, \
    unsigned long long pka_len, unsigned char *m1, unsigned long long m1_len, unsigned char *stb, \
    unsigned long long *stb_len, unsigned char *m2, unsigned long long *m2_len);\n\
    int kex_generate_pass3_msg_a(unsigned char *ska, unsigned long long ska_len, unsigned char *pkb, \
    unsigned long long pkb_len, unsigned char *m2, unsigned long long m2_len, unsigned char *sta, \
    unsigned long long *sta_len, unsigned char *m3, unsigned long long *m3_len);\n\
    int kex_derive_ss_a(unsigned char *ska, unsigned long long ska_len, unsigned char *pkb, \
    unsigned long long pkb_len, unsigned char *mb, unsigned long long mb_len, unsigned char *sta, \
    unsigned long long sta_len, unsigned char *ssa, unsigned long long *ssa_len);\n\
    int kex_derive_ss_b(unsigned char *skb, unsigned long long skb_len, unsigned char *pka, \
    unsigned long long pka_len, unsigned char *ma, unsigned long long ma_len, unsigned char *stb, \
    unsigned long long stb_len, unsigned char *ssb, unsigned long long *ssb_len);\n";

pub fn header(i: &KexInst) -> String {
    format!(
        "#ifndef KEX_FIXTURE_H\n#define KEX_FIXTURE_H\n#define ALGORITHM_INSTANCE \"{}\"\n\
         #define OUTPUT_BLANK_TEST_VECTORS {}\n#define FIX_N {N}\n#define FIX_PASSES {}\n{}{PROTOTYPES}#endif\n",
        i.label,
        u8::from(i.template),
        i.proto.passes,
        i.defines
    )
}

/// Write the extracted tree of the fixture under `dir`; returns its source root.
pub fn write_tree(dir: &Path, instances: &[KexInst]) -> PathBuf {
    let root = dir.join(WRAP).join(ROOT);
    let body = std::fs::read_to_string(Path::new(FIXTURE).join("kex_body.c")).unwrap();
    for i in instances {
        let d = root.join(i.label);
        std::fs::create_dir_all(d.join("KAT")).unwrap();
        for f in ["drng.h", "drng.c", "auxfunc.h", "auxfunc.c", "mix.h", "ct_plant.h"] {
            std::fs::copy(Path::new(FIXTURE).join(f), d.join(f)).unwrap();
        }
        std::fs::write(d.join(format!("KEX_{}.h", i.label)), header(i)).unwrap();
        std::fs::write(d.join(format!("KEX_{}.c", i.label)), format!("#include \"KEX_{}.h\"\n{body}", i.label))
            .unwrap();
        // The shipped KAT generator must stay out of the build.
        std::fs::write(d.join("KAT_KEX.c"), "#error the shipped KAT generator must never be compiled\n").unwrap();
        // The submitted KAT text, with CRLF as submissions have it.
        let text = kat_text(&i.published(), i.template).replace('\n', "\r\n");
        std::fs::write(d.join(format!("KAT/KAT_KEX_{}.txt", i.label)), text).unwrap();
    }
    root
}

pub fn manifest(zip: &Path, instances: &[KexInst]) -> String {
    let bytes = std::fs::metadata(zip).unwrap().len();
    let sha = sha256(&std::fs::read(zip).unwrap());
    let mut m = format!(
        r#"id = "{ID}"
name = "Fixture KEX (test)"
family = "kex"

[source]
kind = "archive"
file = "{WRAP}.zip"
bytes = {bytes}
sha256 = "{sha}"
page = "written by xtask/tests/common/kex_fixture.rs"
root = "{ROOT}"

[build]
sources = ["{{dir}}/*.c"]
include = ["{{dir}}"]
never_compile = ["{{dir}}/KAT_KEX.c"]

[kat]
program = ["driver:iccs_kex_kat.c"]
api_header = "{{dir}}/KEX_{{label}}.h"
file = "KAT_KEX_{{label}}.txt"
reference = "{{dir}}/KAT/KAT_KEX_{{label}}.txt"

[bench]
api = "iccs"
header = "{{dir}}/KEX_{{label}}.h"

{ICCS_GROUPS}"#
    );
    for i in instances {
        m.push_str(&format!("\n[[instance]]\nlabel = \"{0}\"\ndir = \"{0}\"\npasses = {1}\n", i.label, i.passes));
    }
    m
}

/// `kat.sha256`: the strict digest of every instance's published text.
pub fn kat_manifest(instances: &[KexInst]) -> String {
    let mut k = String::from("# derived from the Rust model in tests/common/kex_fixture.rs\n");
    for i in instances {
        let d = strict_digest(&i.published(), i.template);
        k.push_str(&format!("{d} strict {0}/KAT_KEX_{0}.txt\n", i.label));
    }
    k
}

/// A manifest folder: `<dir>/fixture-kex.toml`, `<dir>/fixture-kex/kat.sha256`.
pub fn manifest_dir(dir: &Path, zip: &Path, instances: &[KexInst]) -> PathBuf {
    std::fs::create_dir_all(dir.join(ID)).unwrap();
    std::fs::write(dir.join(format!("{ID}.toml")), manifest(zip, instances)).unwrap();
    std::fs::write(dir.join(ID).join("kat.sha256"), kat_manifest(instances)).unwrap();
    dir.join(format!("{ID}.toml"))
}

/// The fixture's tree and archive under `dir`: (source root, archive).
pub fn write_archive(dir: &Path, instances: &[KexInst]) -> (PathBuf, PathBuf) {
    let root = write_tree(&dir.join("tree"), instances);
    let zip = dir.join(format!("{WRAP}.zip"));
    zip_tree(&dir.join("tree"), &zip);
    (root, zip)
}
