//! The signature fixture: a toy signature scheme in the ICCS SIG shape written for this
//! project (`tests/fixture/sig_body.c`), its Rust model (expected digests come from
//! here, never from running the C code), and the archive and manifests a test gives the
//! tool. The model reuses the KEM fixture's DRNG and hash ([`Drng`], [`expand`]).

use std::path::{Path, PathBuf};

use super::fixture::{expand, hex, zip_tree, Drng, FIXTURE, ICCS_GROUPS, ROOT};
use super::sha256;

pub const ID: &str = "fixture-sig";
pub const WRAP: &str = "Fixture SIG v1";
const HASH: u64 = 0x4841;
const XOF: u64 = 0x584f;
/// Bytes of the signature's DRNG nonce `r` and of its tag `t`.
const R: usize = 16;
const TAG: usize = 32;
pub const SIG_BASE: usize = R + TAG;
/// Longest padding of the variable-length variants (`FIX_PAD`).
pub const PAD_MAX: usize = 16;
pub const RECORDS: usize = 10;

// ---- the model ----------------------------------------------------------------

/// How long the padding of a signature is (`FIX_PAD` in the instance header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pad {
    /// No padding: every signature has [`SIG_BASE`] bytes.
    None,
    /// `m[0] mod 17` bytes: the length depends on the message.
    Message,
    /// Incoming `*sn_len_bytes mod 17` bytes: the length depends on the carry-over.
    Carry,
}

/// How the three lengths pass between records (`[kat] lengths`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lengths {
    /// The official driver: set from the getters once, then carried from record to record.
    Carry,
    /// Set to the claimed sizes before every record.
    Reset,
}

/// The toy scheme: pk = H("P" || sk); sn = r || t || pad with r from the DRNG,
/// t = H("S" || pk || r || p || m) and pad = XOF("Q" || t || p) of p bytes (p one byte:
/// the tag binds the length, so no signature verifies shortened).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scheme {
    pub n: usize,
    pub pad: Pad,
    /// `FIX_IGNORE_KEY`: the tag hashes zeros where the public key goes, so a signature
    /// verifies under every key.
    pub keyless: bool,
}

impl Scheme {
    pub const fn plain(n: usize) -> Scheme {
        Scheme { n, pad: Pad::None, keyless: false }
    }

    /// The signature length the scheme claims (`sig_get_sn_len_bytes`).
    pub fn sn_max(&self) -> usize {
        SIG_BASE + if self.pad == Pad::None { 0 } else { PAD_MAX }
    }

    pub fn public(&self, sk: &[u8]) -> Vec<u8> {
        expand(HASH, &[b"P".as_slice(), sk].concat(), self.n)
    }

    fn tag(&self, pk: &[u8], r: &[u8], p: usize, m: &[u8]) -> Vec<u8> {
        let zeros = vec![0; pk.len()];
        let pk = if self.keyless { &zeros } else { pk };
        expand(HASH, &[b"S".as_slice(), pk, r, &[p as u8], m].concat(), TAG)
    }

    fn padding(t: &[u8], p: usize) -> Vec<u8> {
        expand(XOF, &[b"Q".as_slice(), t, &[p as u8]].concat(), p)
    }

    /// (pk, sk) from the algorithm DRNG.
    pub fn keygen(&self, alg: &mut Drng) -> (Vec<u8>, Vec<u8>) {
        let sk = alg.get(self.n);
        (self.public(&sk), sk)
    }

    /// The signature of `m`; `sn_in` is the value `*sn_len_bytes` holds on entry.
    pub fn sign(&self, sk: &[u8], m: &[u8], sn_in: usize, alg: &mut Drng) -> Vec<u8> {
        let r = alg.get(R);
        let p = match self.pad {
            Pad::None => 0,
            Pad::Message => m.first().map_or(0, |&b| usize::from(b) % (PAD_MAX + 1)),
            Pad::Carry => sn_in % (PAD_MAX + 1),
        };
        let t = self.tag(&self.public(sk), &r, p, m);
        [r.as_slice(), &t, &Self::padding(&t, p)].concat()
    }

    pub fn verify(&self, pk: &[u8], sn: &[u8], m: &[u8]) -> bool {
        if pk.len() != self.n || sn.len() < SIG_BASE || sn.len() > self.sn_max() {
            return false;
        }
        let p = sn.len() - SIG_BASE;
        let t = self.tag(pk, &sn[..R], p, m);
        t == sn[R..SIG_BASE] && Self::padding(&t, p) == sn[SIG_BASE..]
    }
}

/// One KAT_SIG record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub seed: Vec<u8>,
    pub pk: Vec<u8>,
    pub sk: Vec<u8>,
    pub m: Vec<u8>,
    pub sn: Vec<u8>,
}

fn repeat(text: &[u8], n: usize) -> Vec<u8> {
    text.iter().copied().cycle().take(n).collect()
}

/// The ten records of the official driver (facts §2): the seed DRNG on "seed" x 16, the
/// message DRNG on "msg" x 21 + "m", messages of 56 + 8i bytes, the algorithm DRNG
/// seeded with the record's seed before keygen, and the lengths carried or reset.
pub fn records(s: &Scheme, lengths: Lengths) -> Vec<Record> {
    let mut seeds = Drng::new(&repeat(b"seed", 64));
    let mut msgs = Drng::new(&[repeat(b"msg", 63), b"m".to_vec()].concat());
    let mut sn_len = s.sn_max();
    (0..RECORDS)
        .map(|i| {
            let seed = seeds.get(64);
            let m = msgs.get(56 + 8 * i);
            let mut alg = Drng::new(&seed);
            let (pk, sk) = s.keygen(&mut alg);
            if lengths == Lengths::Reset {
                sn_len = s.sn_max();
            }
            let sn = s.sign(&sk, &m, sn_len, &mut alg);
            sn_len = sn.len();
            Record { seed, pk, sk, m, sn }
        })
        .collect()
}

/// The records as KAT_SIG lines; `template`: OUTPUT_BLANK_TEST_VECTORS 1 (the three
/// returned lengths print empty, `M_Len` keeps its value).
pub fn lines(recs: &[Record], template: bool) -> Vec<Vec<String>> {
    let len = |name: &str, n: usize| if template { format!("{name} =") } else { format!("{name} = {n}") };
    recs.iter()
        .enumerate()
        .map(|(i, r)| {
            vec![
                format!("Count = {i}"),
                "Seed_Len = 64".into(),
                format!("Seed = {}", hex(&r.seed)),
                len("PK_Len", r.pk.len()),
                format!("PK = {}", hex(&r.pk)),
                len("SK_Len", r.sk.len()),
                format!("SK = {}", hex(&r.sk)),
                format!("M_Len = {}", r.m.len()),
                format!("M = {}", hex(&r.m)),
                len("Sn_Len", r.sn.len()),
                format!("Sn = {}", hex(&r.sn)),
            ]
        })
        .collect()
}

/// The KAT text as the official driver writes it (LF, a blank line after each record).
pub fn kat_text(s: &Scheme, template: bool, lengths: Lengths) -> String {
    let mut text = String::new();
    for rec in lines(&records(s, lengths), template) {
        for line in rec {
            text.push_str(&line);
            text.push('\n');
        }
        text.push('\n');
    }
    text
}

/// Digest under the `strict` rule (no empty lines, LF after every line), computed here
/// on purpose rather than with the tool's own rule.
pub fn strict_digest(s: &Scheme, template: bool, lengths: Lengths) -> String {
    let mut text = String::new();
    for line in lines(&records(s, lengths), template).into_iter().flatten() {
        text.push_str(line.trim_end());
        text.push('\n');
    }
    sha256(text.as_bytes())
}

// ---- the instances -----------------------------------------------------------

/// What the verify contract must say about an instance (the KAT status is separate).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Contract {
    /// verify gives exactly 0 on the record's signature and -1 on each modification.
    Holds,
    /// verify returns 0 on a modified message, signature or another key.
    AcceptsInvalid,
    /// verify returns a value other than 0 / -1 where those are due.
    Breach,
    /// The check could not be completed (the library took its input): never "holds".
    Fails,
    /// Not asserted: the KAT already failed, so what the contract says is secondary.
    Unchecked,
}

/// One fixture instance: the scheme its published digest models, the defines of its
/// header, and the verdicts it must get.
#[derive(Debug, Clone)]
pub struct SigInst {
    pub label: &'static str,
    /// The honest scheme the published KAT digest comes from.
    pub scheme: Scheme,
    pub template: bool,
    /// Extra lines of `SIG_<label>.h` (the FIX_* switches).
    pub defines: &'static str,
    /// Expected KAT status under the default (`carry`) lengths.
    pub kat: &'static str,
    pub contract: Contract,
}

const fn inst(
    label: &'static str,
    scheme: Scheme,
    defines: &'static str,
    kat: &'static str,
    contract: Contract,
) -> SigInst {
    SigInst { label, scheme, template: false, defines, kat, contract }
}

pub const VAR: Scheme = Scheme { n: 32, pad: Pad::Message, keyless: false };
pub const CARRY: Scheme = Scheme { n: 32, pad: Pad::Carry, keyless: false };
const KEYLESS: Scheme = Scheme { n: 32, pad: Pad::None, keyless: true };

/// Every instance of the fixture; no label is a substring of another (the tests find
/// an instance's line in the tool's output by its label).
pub fn instances() -> Vec<SigInst> {
    use Contract::*;
    let p = Scheme::plain(32);
    vec![
        inst("sig-good", p, "", "PASS", Holds),
        inst("sig-tweak", p, "#define FIX_TWEAK 1\n", "MISMATCH", Holds),
        // sig_sign writes 4 KiB past the claimed length, sparing the first 64 bytes.
        inst("sig-overrun", p, "#define FIX_OVERRUN 1\n", "OVERFLOW", Unchecked),
        // As sign-15: claims 48 bytes, returns up to 64.
        inst("sig-longsig", VAR, "#define FIX_PAD 1\n#define FIX_UNDERCLAIM 1\n", "OVERFLOW", Unchecked),
        inst("sig-signfail", p, "#define FIX_FAIL_SIGN 1\n", "CRYPTOFAIL", Unchecked),
        inst("sig-acceptall", p, "#define FIX_ACCEPT_ALL 1\n", "PASS", AcceptsInvalid),
        // Honest only in a program named sig_contract: the one program has no such name.
        inst("sig-chameleon", p, "#define FIX_CHAMELEON 1\n", "PASS", AcceptsInvalid),
        inst("sig-verify1", p, "#define FIX_VERIFY_ONE 1\n", "PASS", Breach),
        // Verify checks message and signature but not the key: only the other-key check sees it.
        inst("sig-anykey", KEYLESS, "#define FIX_IGNORE_KEY 1\n", "PASS", AcceptsInvalid),
        // Verify compares one byte short: a flipped last signature byte goes unnoticed.
        inst("sig-offbyone", p, "#define FIX_OFF_BY_ONE 1\n", "PASS", AcceptsInvalid),
        // Every 12th sig_sign call of a process returns -4: none of the KAT's ten.
        inst("sig-flaky", p, "#define FIX_FLAKY 1\n", "PASS", Holds),
        inst("sig-varlen", VAR, "#define FIX_PAD 1\n", "PASS", Holds),
        SigInst { template: true, ..inst("sig-template", p, "", "PASS", Holds) },
        inst("sig-carry", CARRY, "#define FIX_PAD 2\n", "PASS", Holds),
        // The hostile ones of issue 17.
        inst("sig-hugelen", p, "#define FIX_HUGE_LEN 1\n", "CRYPTOFAIL", Unchecked),
        inst("sig-msgwrite", p, "#define FIX_MSG_WRITE 1\n", "CRYPTOFAIL", Unchecked),
        inst("sig-getter", p, "#define FIX_GETTER_DRIFT 1\n", "CRYPTOFAIL", Unchecked),
        // Prints KAT lines, a timing JSON line and contract lines; verify accepts all. The
        // drivers' private output channel sends all of it to stderr: the KAT text is the
        // driver's alone (PASS), and the contract still sees the verifier accept anything.
        inst(
            "sig-printer",
            p,
            "#define _DEFAULT_SOURCE 1\n#define FIX_PRINTER 1\n#define FIX_ACCEPT_ALL 1\n",
            "PASS",
            AcceptsInvalid,
        ),
        // Reads stdin in a constructor to forge the contract's lines: every run of the one
        // program has stdin, so it eats the KAT run's mode line too and that run fails.
        inst(
            "sig-forger",
            p,
            "#define _DEFAULT_SOURCE 1\n#define FIX_FORGER 1\n#define FIX_ACCEPT_ALL 1\n",
            "CRYPTOFAIL",
            Unchecked,
        ),
    ]
}

pub fn header(i: &SigInst) -> String {
    format!(
        "#ifndef SIG_FIXTURE_H\n#define SIG_FIXTURE_H\n#define ALGORITHM_INSTANCE \"{}\"\n\
         #define OUTPUT_BLANK_TEST_VECTORS {}\n#define FIX_N {}\n{}\
         unsigned long long sig_get_pk_len_bytes(void);\nunsigned long long sig_get_sk_len_bytes(void);\n\
         unsigned long long sig_get_sn_len_bytes(void);\n\
         int sig_keygen(unsigned char *pk, unsigned long long *pk_len_bytes, unsigned char *sk, \
         unsigned long long *sk_len_bytes);\n\
         int sig_sign(unsigned char *sk, unsigned long long sk_len_bytes, unsigned char *m, \
         unsigned long long m_len_bytes, unsigned char *sn, unsigned long long *sn_len_bytes);\n\
         int sig_verify(unsigned char *pk, unsigned long long pk_len_bytes, unsigned char *sn, \
         unsigned long long sn_len_bytes, unsigned char *m, unsigned long long m_len_bytes);\n#endif\n",
        i.label,
        u8::from(i.template),
        i.scheme.n,
        i.defines
    )
}

/// Write the extracted tree of the fixture under `dir`; returns its source root.
pub fn write_tree(dir: &Path, instances: &[SigInst]) -> PathBuf {
    let root = dir.join(WRAP).join(ROOT);
    let body = std::fs::read_to_string(Path::new(FIXTURE).join("sig_body.c")).unwrap();
    for i in instances {
        let d = root.join(i.label);
        std::fs::create_dir_all(d.join("KAT")).unwrap();
        for f in ["drng.h", "drng.c", "auxfunc.h", "auxfunc.c", "mix.h", "sig_printer.h", "ct_plant.h", "chameleon.h"] {
            std::fs::copy(Path::new(FIXTURE).join(f), d.join(f)).unwrap();
        }
        std::fs::write(d.join(format!("SIG_{}.h", i.label)), header(i)).unwrap();
        std::fs::write(d.join(format!("SIG_{}.c", i.label)), format!("#include \"SIG_{}.h\"\n{body}", i.label))
            .unwrap();
        // The shipped KAT generator must stay out of the build.
        std::fs::write(d.join("KAT_SIG.c"), "#error the shipped KAT generator must never be compiled\n").unwrap();
        // The submitted KAT text of the honest scheme, with CRLF as submissions have it.
        let text = kat_text(&i.scheme, i.template, Lengths::Carry).replace('\n', "\r\n");
        std::fs::write(d.join(format!("KAT/KAT_SIG_{}.txt", i.label)), text).unwrap();
    }
    root
}

pub fn manifest(zip: &Path, instances: &[SigInst], lengths: Lengths) -> String {
    let bytes = std::fs::metadata(zip).unwrap().len();
    let sha = sha256(&std::fs::read(zip).unwrap());
    let lengths = match lengths {
        Lengths::Carry => "",
        Lengths::Reset => "lengths = \"reset\"\n",
    };
    let mut m = format!(
        r#"id = "{ID}"
name = "Fixture SIG (test)"
family = "sig"

[source]
kind = "archive"
file = "{WRAP}.zip"
bytes = {bytes}
sha256 = "{sha}"
page = "written by xtask/tests/sig_fixture.rs"
root = "{ROOT}"

[build]
sources = ["{{dir}}/*.c"]
include = ["{{dir}}"]
never_compile = ["{{dir}}/KAT_SIG.c"]

[kat]
program = ["driver:iccs_sig_kat.c"]
api_header = "{{dir}}/SIG_{{label}}.h"
file = "KAT_SIG_{{label}}.txt"
reference = "{{dir}}/KAT/KAT_SIG_{{label}}.txt"
{lengths}
[bench]
api = "iccs"
header = "{{dir}}/SIG_{{label}}.h"

{ICCS_GROUPS}"#
    );
    for i in instances {
        m.push_str(&format!("\n[[instance]]\nlabel = \"{0}\"\ndir = \"{0}\"\n", i.label));
    }
    m
}

/// `kat.sha256`: the strict digest of every instance's honest scheme under `lengths`.
pub fn kat_manifest(instances: &[SigInst], lengths: Lengths) -> String {
    let mut k = String::from("# derived from the Rust model in tests/common/sig_fixture.rs\n");
    for i in instances {
        let d = strict_digest(&i.scheme, i.template, lengths);
        k.push_str(&format!("{d} strict {0}/KAT_SIG_{0}.txt\n", i.label));
    }
    k
}

/// A manifest folder: `<dir>/fixture-sig.toml`, `<dir>/fixture-sig/kat.sha256`.
pub fn manifest_dir(dir: &Path, zip: &Path, instances: &[SigInst], lengths: Lengths) -> PathBuf {
    std::fs::create_dir_all(dir.join(ID)).unwrap();
    std::fs::write(dir.join(format!("{ID}.toml")), manifest(zip, instances, lengths)).unwrap();
    std::fs::write(dir.join(ID).join("kat.sha256"), kat_manifest(instances, lengths)).unwrap();
    dir.join(format!("{ID}.toml"))
}

/// The fixture's tree and archive under `dir`: (source root, archive).
pub fn write_archive(dir: &Path, instances: &[SigInst]) -> (PathBuf, PathBuf) {
    let root = write_tree(&dir.join("tree"), instances);
    let zip = dir.join(format!("{WRAP}.zip"));
    zip_tree(&dir.join("tree"), &zip);
    (root, zip)
}
