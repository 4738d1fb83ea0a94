//! The fixture candidate: a KEM in the NGCC shape written for this project, its Rust
//! model (expected digests come from here, never from running the C code), and the
//! archive and manifests a test gives the tool.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::sha256;

/// The ICCS placeholder hash functions and DRNG as `[profile]` groups (every ICCS-shaped
/// fixture's manifest has them).
pub const ICCS_GROUPS: &str = r#"[[profile.groups]]
name = "hash"
kind = "iccs-hash"
family = "ICCS"
symbols = ["pseudohash", "pseudoXOF", "sm3hash"]

[[profile.groups]]
name = "drng"
kind = "iccs-drng"
family = "ICCS"
symbols = ["get_random_number"]
"#;

/// The `[kat]` and `[bench]` tables of every ICCS-shaped fixture KEM (`KEM_<label>.h`,
/// the submitted text under `KAT/`).
pub const KAT_AND_BENCH: &str = r#"[kat]
program = ["driver:iccs_kem_kat.c"]
api_header = "{dir}/KEM_{label}.h"
file = "KAT_KEM_{label}.txt"
reference = "{dir}/KAT/KAT_KEM_{label}.txt"

[bench]
api = "iccs"
header = "{dir}/KEM_{label}.h"
"#;

pub const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixture");
pub const WRAP: &str = "Fixture KEM v1";
pub const ROOT: &str = "Implementations/Reference_Implementation";

// ---- the model ----------------------------------------------------------------

pub fn absorb(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

pub fn squeeze(s: &mut u64, n: usize) -> Vec<u8> {
    (0..n)
        .map(|_| {
            *s = s.wrapping_add(0x9E3779B97F4A7C15);
            let mut z = *s;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
            (z ^ (z >> 31)) as u8
        })
        .collect()
}

pub struct Drng(u64);
impl Drng {
    pub fn new(seed: &[u8]) -> Drng {
        Drng(absorb(0xcbf29ce484222325, seed))
    }
    pub fn get(&mut self, n: usize) -> Vec<u8> {
        squeeze(&mut self.0, n)
    }
}

pub fn expand(iv: u64, msg: &[u8], n: usize) -> Vec<u8> {
    squeeze(&mut absorb(iv, msg), n)
}
const HASH: u64 = 0x4841;
const XOF: u64 = 0x584f;

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02X}")).collect()
}

/// The KAT text of a good fixture instance with `n`-byte objects, as lines.
pub fn model_lines(n: usize) -> Vec<Vec<String>> {
    model_records(n, 10)
}

/// The first `records` records of the driver's schedule for `n`-byte objects.
pub fn model_records(n: usize, records: usize) -> Vec<Vec<String>> {
    let nonce: Vec<u8> = b"seed".iter().copied().cycle().take(64).collect();
    let mut seeds = Drng::new(&nonce);
    (0..records)
        .map(|count| {
            let seed = seeds.get(64);
            let mut alg = Drng::new(&seed);
            let sk = alg.get(n);
            let pk = expand(HASH, &[b"P".as_slice(), &sk].concat(), n);
            let r = alg.get(n);
            let mask = expand(XOF, &pk, n);
            let ct: Vec<u8> = r.iter().zip(&mask).map(|(a, b)| a ^ b).collect();
            let ss = expand(HASH, &[r.as_slice(), &pk].concat(), n);
            vec![
                format!("Count = {count}"),
                "Seed_Len = 64".into(),
                format!("Seed = {}", hex(&seed)),
                format!("PK_Len = {n}"),
                format!("PK = {}", hex(&pk)),
                format!("SK_Len = {n}"),
                format!("SK = {}", hex(&sk)),
                format!("CT_Len = {n}"),
                format!("CT = {}", hex(&ct)),
                format!("SS_Len = {n}"),
                format!("SS = {}", hex(&ss)),
            ]
        })
        .collect()
}

/// The submitted KAT text of a good instance (what the fixture ships under KAT/).
pub fn model_text(n: usize) -> String {
    let mut kat = String::new();
    for rec in model_lines(n) {
        for line in rec {
            kat.push_str(&line);
            kat.push_str("\r\n");
        }
        kat.push_str("\r\n");
    }
    kat
}

/// Digest of the model text under the manifest rules, computed here on purpose
/// (strict: no empty lines, LF after every line; nolen: no `*_Len` lines).
pub fn model_digest(n: usize, nolen: bool, records: usize) -> String {
    let mut text = String::new();
    for rec in model_lines(n).into_iter().take(records) {
        for line in rec {
            if nolen && line.split(" = ").next().unwrap().ends_with("_Len") {
                continue;
            }
            text.push_str(&line);
            text.push('\n');
        }
    }
    sha256(text.as_bytes())
}

// ---- the fixture archive -----------------------------------------------------

/// One fixture instance: (label, n, extra header lines).
pub type Inst = (&'static str, usize, String);

/// The instances of the plain fixture: every status of the reference vocabulary.
pub fn plain_instances() -> Vec<Inst> {
    [
        ("fix-16", 16, ""),
        ("fix-32", 32, ""),
        ("fix-patch", 24, ""),
        ("fix-tweak", 16, "#define FIX_TWEAK 1\n"),
        ("fix-nokat", 16, ""),
        ("fix-failenc", 16, "#define FIX_FAIL_ENC 1\n"),
        ("fix-overflow", 16, "#define FIX_OVERFLOW 1\n"),
        ("fix-crash", 16, "#define FIX_CRASH 1\n"),
        ("fix-hang", 16, "#define FIX_HANG 1\n"),
        ("fix-malleable", 16, "#define FIX_MALLEABLE 1\n"),
    ]
    .into_iter()
    .map(|(l, n, e)| (l, n, e.to_owned()))
    .collect()
}

pub fn header(label: &str, n: usize, extra: &str) -> String {
    format!(
        "#ifndef KEM_FIXTURE_H\n#define KEM_FIXTURE_H\n#define ALGORITHM_INSTANCE \"{label}\"\n\
         #define OUTPUT_BLANK_TEST_VECTORS 0\n#define FIX_N {n}\n{extra}\
         unsigned long long kem_get_pk_len_bytes(void);\nunsigned long long kem_get_sk_len_bytes(void);\n\
         unsigned long long kem_get_ss_len_bytes(void);\nunsigned long long kem_get_ct_len_bytes(void);\n\
         int kem_keygen(unsigned char *pk, unsigned long long *pk_len, unsigned char *sk, unsigned long long *sk_len);\n\
         int kem_enc(unsigned char *pk, unsigned long long pk_len, unsigned char *ss, unsigned long long *ss_len, \
         unsigned char *ct, unsigned long long *ct_len);\n\
         int kem_dec(unsigned char *sk, unsigned long long sk_len, unsigned char *ct, unsigned long long ct_len, \
         unsigned char *ss, unsigned long long *ss_len);\n#endif\n"
    )
}

/// Write the extracted tree of the fixture under `dir`; returns its source root.
pub fn write_tree(dir: &Path, instances: &[Inst]) -> PathBuf {
    let root = dir.join(WRAP).join(ROOT);
    for (label, n, extra) in instances {
        let (label, n, extra) = (*label, *n, extra.as_str());
        let d = root.join(label);
        std::fs::create_dir_all(d.join("KAT")).unwrap();
        std::fs::create_dir_all(d.join("prebuilt")).unwrap();
        for f in [
            "drng.h",
            "drng.c",
            "auxfunc.h",
            "auxfunc.c",
            "mix.h",
            "hostile.h",
            "canned.h",
            "forge.h",
            "keccak.h",
            "keccak.c",
            "ct_plant.h",
            "chameleon.h",
        ] {
            std::fs::copy(Path::new(FIXTURE).join(f), d.join(f)).unwrap();
        }
        if label == "fix-32" {
            // This instance's library also exports `randombytes` (flagged by verify).
            std::fs::copy(Path::new(FIXTURE).join("exports.c"), d.join("exports.c")).unwrap();
        }
        let mut h = header(label, n, extra);
        if label == "fix-16" {
            h = h.replace('\n', "\r\n"); // CRLF sources must build too
        }
        std::fs::write(d.join(format!("KEM_{label}.h")), h).unwrap();
        let body = std::fs::read_to_string(Path::new(FIXTURE).join("kem_body.c")).unwrap();
        let mut c = format!("#include \"KEM_{label}.h\"\n");
        if label == "fix-patch" {
            c.push_str("#error fixture: this line only compiles once the patch removes it\n");
        }
        if label == "fix-x86only" {
            // As BRQC: an x86-64 header that AArch64 compilers do not have.
            c.push_str("#include <x86intrin.h>\n");
        }
        c.push_str(&body);
        std::fs::write(d.join(format!("KEM_{label}.c")), c).unwrap();
        // Files a manifest must keep out of the build.
        std::fs::write(d.join("KAT_KEM.c"), "#error the shipped KAT generator must never be compiled\n").unwrap();
        std::fs::write(d.join("main_demo.c"), "#error the demo must never be compiled\n").unwrap();
        // A shipped "binary" that must never run (it would leave a marker).
        let bin = d.join("prebuilt/kat_gen");
        std::fs::write(&bin, "#!/bin/sh\ntouch /tmp/ngcc-fixture-binary-was-run\n").unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        // The submitted KAT text (correct per the model), with CRLF and blank lines.
        std::fs::write(d.join(format!("KAT/KAT_KEM_{label}.txt")), model_text(n)).unwrap();
    }
    root
}

pub fn zip_tree(tree: &Path, zip_path: &Path) {
    let file = std::fs::File::create(zip_path).unwrap();
    let mut zip = zip::ZipWriter::new(file);
    for entry in walkdir::WalkDir::new(tree).sort_by_file_name() {
        let entry = entry.unwrap();
        let rel = entry.path().strip_prefix(tree).unwrap().to_str().unwrap().to_owned();
        if rel.is_empty() {
            continue;
        }
        let mode = entry.metadata().unwrap().permissions().mode() & 0o777;
        let opts = zip::write::SimpleFileOptions::default().unix_permissions(mode);
        if entry.file_type().is_dir() {
            zip.add_directory(format!("{rel}/"), opts).unwrap();
        } else {
            zip.start_file(rel, opts).unwrap();
            zip.write_all(&std::fs::read(entry.path()).unwrap()).unwrap();
        }
    }
    zip.finish().unwrap();
}

pub fn manifest(zip: &Path, instances: &[Inst]) -> String {
    let bytes = std::fs::metadata(zip).unwrap().len();
    let sha = sha256(&std::fs::read(zip).unwrap());
    let mut m = format!(
        r#"id = "fixture-kem"
name = "Fixture KEM (test)"

[source]
kind = "archive"
file = "Fixture KEM v1.zip"
bytes = {bytes}
sha256 = "{sha}"
page = "written by xtask/tests/ngcc_fixture.rs"
root = "{ROOT}"

[build]
sources = ["{{dir}}/*.c"]
include = ["{{dir}}"]
never_compile = ["{{dir}}/KAT_KEM.c", "{{dir}}/main_demo.c"]

{KAT_AND_BENCH}
{ICCS_GROUPS}
[[profile.groups]]
name = "keccak"
kind = "direct"
family = "Keccak"
symbols = ["fixture_keccak_f1600"]
"#
    );
    for (label, _, _) in instances {
        m.push_str(&format!("\n[[instance]]\nlabel = \"{label}\"\ndir = \"{label}\"\n"));
    }
    m
}

pub fn kat_manifest(instances: &[Inst]) -> String {
    let mut k = String::from("# derived from the Rust model in tests/common/fixture.rs\n");
    for (label, n, _) in instances {
        let (label, n) = (*label, *n);
        let line = match label {
            "fix-nokat" => continue,
            "fix-32" => format!("{} nolen:3 {label}/KAT_KEM_{label}.txt\n", model_digest(n, true, 3)),
            _ => format!("{} strict {label}/KAT_KEM_{label}.txt\n", model_digest(n, false, 10)),
        };
        k.push_str(&line);
    }
    k
}

pub const PATCH: &str = concat!(
    "Reason: the fixture's KEM_fix-patch.c carries an #error line that stops the build\n",
    "--- a/fix-patch/KEM_fix-patch.c\n",
    "+++ b/fix-patch/KEM_fix-patch.c\n",
    "@@ -1,3 +1,2 @@\n",
    " #include \"KEM_fix-patch.h\"\n",
    "-#error fixture: this line only compiles once the patch removes it\n",
    " /* Fixture KEM body; the test prepends `#include \"KEM_<label>.h\"`, which sets FIX_N and\n",
);

/// A manifest folder: `<dir>/fixture-kem.toml`, `<dir>/fixture-kem/{kat.sha256,patches/}`.
pub fn manifest_dir(dir: &Path, zip: &Path, with_patch: bool, instances: &[Inst]) -> PathBuf {
    std::fs::create_dir_all(dir.join("fixture-kem/patches")).unwrap();
    std::fs::write(dir.join("fixture-kem.toml"), manifest(zip, instances)).unwrap();
    std::fs::write(dir.join("fixture-kem/kat.sha256"), kat_manifest(instances)).unwrap();
    if with_patch {
        std::fs::write(dir.join("fixture-kem/patches/0001-drop-error.patch"), PATCH).unwrap();
    }
    dir.join("fixture-kem.toml")
}
