//! The NGCC path end to end on a fixture candidate written for this project: an
//! archive in the official shape, built in the Debian 13 container with the harness's
//! own ICCS KAT driver. Expected digests come from a Rust model of the fixture's
//! arithmetic (below), never from running the C code.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

mod common;

use common::{sha256, xtask};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixture");
const WRAP: &str = "Fixture KEM v1";
const ROOT: &str = "Implementations/Reference_Implementation";

// ---- the model ----------------------------------------------------------------

fn absorb(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

fn squeeze(s: &mut u64, n: usize) -> Vec<u8> {
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

struct Drng(u64);
impl Drng {
    fn new(seed: &[u8]) -> Drng {
        Drng(absorb(0xcbf29ce484222325, seed))
    }
    fn get(&mut self, n: usize) -> Vec<u8> {
        squeeze(&mut self.0, n)
    }
}

fn expand(iv: u64, msg: &[u8], n: usize) -> Vec<u8> {
    squeeze(&mut absorb(iv, msg), n)
}
const HASH: u64 = 0x4841;
const XOF: u64 = 0x584f;

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02X}")).collect()
}

/// The KAT text of a good fixture instance with `n`-byte objects, as lines.
fn model_lines(n: usize) -> Vec<Vec<String>> {
    let nonce: Vec<u8> = b"seed".iter().copied().cycle().take(64).collect();
    let mut seeds = Drng::new(&nonce);
    (0..10)
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

/// Digest of the model text under the manifest rules, computed here on purpose
/// (strict: no empty lines, LF after every line; nolen: no `*_Len` lines).
fn model_digest(n: usize, nolen: bool, records: usize) -> String {
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

/// (label, n, extra header lines)
const INSTANCES: &[(&str, usize, &str)] = &[
    ("fix-16", 16, ""),
    ("fix-32", 32, ""),
    ("fix-patch", 24, ""),
    ("fix-tweak", 16, "#define FIX_TWEAK 1\n"),
    ("fix-nokat", 16, ""),
    ("fix-failenc", 16, "#define FIX_FAIL_ENC 1\n"),
    ("fix-overflow", 16, "#define FIX_OVERFLOW 1\n"),
    ("fix-crash", 16, "#define FIX_CRASH 1\n"),
    ("fix-hang", 16, "#define FIX_HANG 1\n"),
];

fn header(label: &str, n: usize, extra: &str) -> String {
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
fn write_tree(dir: &Path) -> PathBuf {
    let root = dir.join(WRAP).join(ROOT);
    for &(label, n, extra) in INSTANCES {
        let d = root.join(label);
        std::fs::create_dir_all(d.join("KAT")).unwrap();
        std::fs::create_dir_all(d.join("prebuilt")).unwrap();
        for f in ["drng.h", "drng.c", "auxfunc.h", "auxfunc.c", "mix.h"] {
            std::fs::copy(Path::new(FIXTURE).join(f), d.join(f)).unwrap();
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
        let mut kat = String::new();
        for rec in model_lines(n) {
            for line in rec {
                kat.push_str(&line);
                kat.push_str("\r\n");
            }
            kat.push_str("\r\n");
        }
        std::fs::write(d.join(format!("KAT/KAT_KEM_{label}.txt")), kat).unwrap();
    }
    root
}

fn zip_tree(tree: &Path, zip_path: &Path) {
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

fn manifest(zip: &Path) -> String {
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

[kat]
program = ["driver:iccs_kem_kat.c"]
api_header = "{{dir}}/KEM_{{label}}.h"
file = "KAT_KEM_{{label}}.txt"
reference = "{{dir}}/KAT/KAT_KEM_{{label}}.txt"

[bench]
api = "iccs"
header = "{{dir}}/KEM_{{label}}.h"
"#
    );
    for &(label, _, _) in INSTANCES {
        m.push_str(&format!("\n[[instance]]\nlabel = \"{label}\"\ndir = \"{label}\"\n"));
    }
    m
}

fn kat_manifest() -> String {
    let mut k = String::from("# derived from the Rust model in ngcc_fixture.rs\n");
    for &(label, n, _) in INSTANCES {
        let line = match label {
            "fix-nokat" => continue,
            "fix-32" => format!("{} nolen:3 {label}/KAT_KEM_{label}.txt\n", model_digest(n, true, 3)),
            _ => format!("{} strict {label}/KAT_KEM_{label}.txt\n", model_digest(n, false, 10)),
        };
        k.push_str(&line);
    }
    k
}

const PATCH: &str = concat!(
    "Reason: the fixture's KEM_fix-patch.c carries an #error line that stops the build\n",
    "--- a/fix-patch/KEM_fix-patch.c\n",
    "+++ b/fix-patch/KEM_fix-patch.c\n",
    "@@ -1,3 +1,2 @@\n",
    " #include \"KEM_fix-patch.h\"\n",
    "-#error fixture: this line only compiles once the patch removes it\n",
    " /* Fixture KEM body; the test prepends `#include \"KEM_<label>.h\"`, which sets FIX_N and\n",
);

/// A manifest folder: `<dir>/fixture-kem.toml`, `<dir>/fixture-kem/{kat.sha256,patches/}`.
fn manifest_dir(dir: &Path, zip: &Path, with_patch: bool) -> PathBuf {
    std::fs::create_dir_all(dir.join("fixture-kem/patches")).unwrap();
    std::fs::write(dir.join("fixture-kem.toml"), manifest(zip)).unwrap();
    std::fs::write(dir.join("fixture-kem/kat.sha256"), kat_manifest()).unwrap();
    if with_patch {
        std::fs::write(dir.join("fixture-kem/patches/0001-drop-error.patch"), PATCH).unwrap();
    }
    dir.join("fixture-kem.toml")
}

fn statuses(out: &Path) -> serde_json::Value {
    common::summary(out, "fixture-kem")
}

fn status_of<'a>(s: &'a serde_json::Value, label: &str) -> &'a serde_json::Value {
    s["instances"].as_array().unwrap().iter().find(|i| i["label"] == label).unwrap()
}

#[test]
fn model_is_deterministic_and_mode_sensitive() {
    assert_eq!(model_lines(16), model_lines(16));
    assert_eq!(model_lines(16).len(), 10);
    assert_eq!(model_lines(16)[0].len(), 11);
    assert_ne!(model_digest(16, false, 10), model_digest(16, true, 10));
    assert_ne!(model_digest(16, false, 10), model_digest(16, false, 3));
}

#[test]
fn fixture_archive_in_container_gives_every_status() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    let root = write_tree(&tree);
    let zip = tmp.path().join("Fixture KEM v1.zip");
    zip_tree(&tree, &zip);
    let m = manifest_dir(&tmp.path().join("with patch"), &zip, true);
    let m = m.to_str().unwrap();
    let out = tmp.path().join("out");
    let out_s = out.to_str().unwrap();
    let _ = std::fs::remove_file("/tmp/ngcc-fixture-binary-was-run");

    // Missing archive: an actionable message, nothing built.
    let missing = xtask(&["verify", m, "--engine", "podman", "--out", out_s], None);
    assert!(!missing.status.success());
    let err = String::from_utf8_lossy(&missing.stderr);
    assert!(err.contains("Fixture KEM v1.zip") && err.contains("--archive PATH"), "{err}");

    // A tampered archive is refused before extraction (fresh cache stays empty).
    let bad_zip = tmp.path().join("tampered.zip");
    let mut bytes = std::fs::read(&zip).unwrap();
    let last = bytes.len() - 30;
    bytes[last] ^= 1;
    std::fs::write(&bad_zip, bytes).unwrap();
    let cache = tmp.path().join("fresh-cache");
    let refused = xtask(
        &["verify", m, "--engine", "podman", "--out", out_s, "--archive", bad_zip.to_str().unwrap()],
        Some(&cache),
    );
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("refusing"));
    assert!(!cache.join("sources").exists(), "nothing may be extracted from a refused archive");

    // The real run: every status, in the container.
    let run = xtask(
        &["verify", m, "--engine", "podman", "--out", out_s, "--archive", zip.to_str().unwrap(), "--timeout", "5"],
        None,
    );
    assert!(!run.status.success(), "bad instances must fail the run");
    let s = statuses(&out);
    assert_eq!(s["toolchain"]["gcc_version"], "gcc (Debian 14.2.0-19) 14.2.0");
    assert_eq!(s["source"]["kind"], "archive");
    assert_eq!(s["patches"][0]["file"], "0001-drop-error.patch");
    assert_eq!(s["patches"][0]["sha256"], sha256(PATCH.as_bytes()));
    for (label, want) in [
        ("fix-16", "PASS"),
        ("fix-32", "PASS"),
        ("fix-patch", "PASS"),
        ("fix-tweak", "MISMATCH"),
        ("fix-nokat", "NOKAT"),
        ("fix-failenc", "CRYPTOFAIL"),
        ("fix-overflow", "OVERFLOW"),
        ("fix-crash", "CRASH"),
        ("fix-hang", "TIMEOUT"),
    ] {
        assert_eq!(status_of(&s, label)["status"], want, "{label}");
    }
    assert_eq!(
        status_of(&s, "fix-16")["flags"],
        serde_json::json!(["-std=c99", "-Wpedantic", "-Wall", "-Wextra", "-O2"])
    );
    let text = String::from_utf8_lossy(&run.stdout);
    assert!(text.contains("patched (0001-drop-error.patch sha256"), "{text}");
    assert!(text.contains("first differing record"), "{text}");
    assert!(text.contains("--- expected\n      Count = 0\n"), "{text}");
    // The never-compile files stayed out (their #error would have been a BUILDFAIL) and
    // the shipped binary was neither run nor left executable.
    assert!(!Path::new("/tmp/ngcc-fixture-binary-was-run").exists());
    let sha = sha256(&std::fs::read(&zip).unwrap());
    let extracted = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target/ngcc-repro/sources")
        .join(&sha)
        .join(WRAP)
        .join(ROOT)
        .join("fix-16/prebuilt/kat_gen");
    assert_eq!(std::fs::metadata(&extracted).unwrap().permissions().mode() & 0o111, 0);
    // The patch went to a copy: the extracted original still has the #error line.
    let original = extracted.parent().unwrap().parent().unwrap().parent().unwrap().join("fix-patch/KEM_fix-patch.c");
    assert!(std::fs::read_to_string(original).unwrap().contains("#error"));

    // Timing through the ICCS adapter; the fixture has no row in the size catalog,
    // and the size audit says so.
    let bench = xtask(
        &[
            "bench",
            m,
            "--engine",
            "podman",
            "--out",
            out_s,
            "--archive",
            zip.to_str().unwrap(),
            "--instance",
            "fix-32",
            "--quick",
            "--allow-unfixed-host",
            "--op",
            "enc",
        ],
        None,
    );
    assert!(bench.status.success());
    let rec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("local/records/fixture-kem/fix-32__enc.json")).unwrap())
            .unwrap();
    assert_eq!(rec["sizes"]["api"], serde_json::json!({"pk": 32, "sk": 32, "ct": 32, "ss": 32}));
    assert_eq!(rec["patches"][0]["file"], "0001-drop-error.patch");
    let audit = std::fs::read_to_string(out.join("local/records/fixture-kem/size_audit.json")).unwrap();
    assert!(audit.contains("\"field\": \"row\""), "{audit}");
    assert!(String::from_utf8_lossy(&bench.stdout).contains("fix-32: no row in the size catalog"));

    // The same fixture through --source-dir: unpinned directory with its tree digest.
    let dir_run = xtask(
        &[
            "verify",
            m,
            "--engine",
            "podman",
            "--out",
            out_s,
            "--source-dir",
            tree.to_str().unwrap(),
            "--instance",
            "fix-16",
            "--instance",
            "fix-32",
            "--instance",
            "fix-patch",
        ],
        None,
    );
    assert!(dir_run.status.success());
    let s = statuses(&out);
    assert_eq!(s["source"]["kind"], "directory");
    assert_eq!(s["source"]["note"], "unpinned directory");
    assert_eq!(s["source"]["path"], root.canonicalize().unwrap().to_str().unwrap());
    assert!(String::from_utf8_lossy(&dir_run.stdout).contains("unpinned directory"));

    // Without the patch the shipped source does not compile: BUILDFAIL, no fallback.
    let m2 = manifest_dir(&tmp.path().join("no patch"), &zip, false);
    let no_patch = xtask(
        &[
            "verify",
            m2.to_str().unwrap(),
            "--engine",
            "podman",
            "--out",
            out_s,
            "--archive",
            zip.to_str().unwrap(),
            "--instance",
            "fix-patch",
        ],
        None,
    );
    assert!(!no_patch.status.success());
    let s = statuses(&out);
    assert_eq!(status_of(&s, "fix-patch")["status"], "BUILDFAIL");
    assert!(String::from_utf8_lossy(&no_patch.stdout).contains("only compiles once the patch removes it"));
}
