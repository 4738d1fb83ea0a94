//! The field fixture: what the NGCC field's manifests need, on one fixture archive written for this
//! project: a nested root with spaces and a hidden folder, per-instance sources and
//! defines, `.S` files, a link library, per-architecture defines, the official ICCS
//! files from a (fixture) API package, record counts other than 10, a documented
//! known failure, a candidate defining `drng_algorithm` itself, per-instance time
//! limits and output caps, and link-only flags. Expected digests come from the Rust model in
//! common/fixture.rs, never from running the C code.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::fixture::{header, model_records, zip_tree, ICCS_GROUPS, KAT_AND_BENCH};
use super::sha256;

const WRAP: &str = "Field Fixture";
const ROOT: &str = "Implementations/Implementations";
const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixture");

/// (label, dir, object bytes, what its KEM_<label>.c adds before the body)
pub const INSTANCES: &[(&str, &str, usize, &str)] = &[
    ("f-plain", "Level One", 16, ""),
    ("f-asm", "asm", 16, "int fixture_asm_zero(void);\nint fixture_asm_used(void) { return fixture_asm_zero(); }\n"),
    ("f-gmp", "gmp", 16, GMP_PRELUDE),
    ("f-arch", "arch", 16, ARCH_PRELUDE),
    ("f-100", "hundred", 16, ""),
    ("f-3", "three", 24, ""),
    ("f-known", "known", 16, ""),
    ("f-owndrng", "own drng", 16, "#include \"drng.h\"\nDRNG_ctx drng_algorithm;\n"),
    ("f-hang", "hang", 16, "#define FIX_HANG 1\n"),
    ("f-big", "big", 40000, ""),
    ("f-x86", "x86 only", 16, X86_PRELUDE),
    ("f-defsym", "defsym", 16, DEFSYM_PRELUDE),
];

/// Calls a name only the library's link defines (`-Wl,--defsym`, as sign-02's AVX2
/// instances alias their assembly): without the manifest's `link_flags` no link finds it.
const DEFSYM_PRELUDE: &str =
    "int fixture_alias_zero(void);\nint fixture_alias_used(void) { return fixture_alias_zero(); }\n";

/// x86-64 only as written: an SSE2 intrinsic from <immintrin.h> and `bsr` inline assembly
/// (as kem-01's and kem-07's sources have); the manifest says `arch = ["x86_64"]`.
const X86_PRELUDE: &str = "#include <immintrin.h>
int fixture_x86_zero(void) { __m128i z = _mm_setzero_si128(); \
    unsigned int top; __asm__(\"bsr %1, %0\" : \"=r\"(top) : \"r\"(1u)); return _mm_cvtsi128_si32(z) + (int)top; }\n";

/// Links only when the library is linked with -lgmp (and the image has gmp.h).
const GMP_PRELUDE: &str = "#include <gmp.h>\nint fixture_gmp_check(void) { mpz_t x; mpz_init_set_ui(x, 2); \
    mpz_pow_ui(x, x, 10); int ok = mpz_cmp_ui(x, 1024) == 0; mpz_clear(x); return ok ? 0 : -1; }\n\
    int fixture_gmp_used(void);\nint fixture_gmp_needed(void) { return fixture_gmp_used(); }\n";

/// Builds only where the architecture's own table defined its macro.
const ARCH_PRELUDE: &str = "#if defined(__x86_64__) && !defined(FIX_ARCH_X86)\n#error x86-64 table not applied\n\
    #endif\n#if defined(__aarch64__) && !defined(FIX_ARCH_ARM)\n#error aarch64 table not applied\n#endif\n\
    #if defined(FIX_ARCH_X86) && defined(FIX_ARCH_ARM)\n#error both tables applied\n#endif\n";

/// An x86-64 and an AArch64 body for one function returning 0.
const ASM: &str =
    ".text\n.globl fixture_asm_zero\n#if defined(__x86_64__)\nfixture_asm_zero:\n  xorl %eax, %eax\n  ret\n\
    #elif defined(__aarch64__)\nfixture_asm_zero:\n  mov w0, #0\n  ret\n#endif\n\
    .section .note.GNU-stack,\"\",@progbits\n";

fn model_text(n: usize, records: usize) -> String {
    model_records(n, records).iter().map(|r| r.join("\r\n") + "\r\n\r\n").collect()
}

fn model_digest(n: usize, records: usize) -> String {
    let lines: Vec<String> = model_records(n, records).concat();
    sha256((lines.join("\n") + "\n").as_bytes())
}

/// The archive tree: instance folders with no drng.c/auxfunc.c (the API package brings
/// them) and the Keccak code in a hidden shared folder.
pub fn write_tree(tree: &Path) {
    let root = tree.join(WRAP).join(ROOT);
    let common = root.join(".common");
    std::fs::create_dir_all(&common).unwrap();
    std::fs::copy(Path::new(FIXTURE).join("keccak.c"), common.join("keccak.c")).unwrap();
    std::fs::copy(Path::new(FIXTURE).join("keccak.h"), common.join("keccak.h")).unwrap();
    let body = std::fs::read_to_string(Path::new(FIXTURE).join("kem_body.c")).unwrap();
    for (label, dir, n, prelude) in INSTANCES {
        let d = root.join(dir);
        std::fs::create_dir_all(d.join("KAT")).unwrap();
        for f in ["drng.h", "auxfunc.h", "mix.h", "hostile.h", "canned.h", "forge.h"] {
            std::fs::copy(Path::new(FIXTURE).join(f), d.join(f)).unwrap();
        }
        std::fs::write(d.join(format!("KEM_{label}.h")), header(label, *n, "")).unwrap();
        std::fs::write(d.join(format!("KEM_{label}.c")), format!("#include \"KEM_{label}.h\"\n{prelude}{body}"))
            .unwrap();
        std::fs::write(d.join("KAT_KEM.c"), "#error the shipped KAT generator must never be compiled\n").unwrap();
        let records = if *label == "f-100" { 100 } else { 10 };
        std::fs::write(d.join(format!("KAT/KAT_KEM_{label}.txt")), model_text(*n, records)).unwrap();
    }
    std::fs::write(root.join("asm/zero.S"), ASM).unwrap();
    std::fs::write(root.join("defsym/zero.S"), ASM).unwrap();
    std::fs::write(
        root.join("gmp/uses_gmp.c"),
        "int fixture_gmp_check(void);\nint fixture_gmp_used(void) { return fixture_gmp_check(); }\n",
    )
    .unwrap();
}

/// The fixture's ICCS API package: the fixture's own drng.c/auxfunc.c (written for this
/// project, with the ICCS names), in a folder of a zip.
pub fn write_api_package(dir: &Path) -> PathBuf {
    let tree = dir.join("api-tree");
    let api = tree.join("API_PKC/common");
    std::fs::create_dir_all(&api).unwrap();
    for f in ["drng.c", "drng.h", "auxfunc.c", "auxfunc.h", "mix.h"] {
        std::fs::copy(Path::new(FIXTURE).join(f), api.join(f)).unwrap();
    }
    let zip = dir.join("API_PKC.zip");
    zip_tree(&tree, &zip);
    let bytes = std::fs::metadata(&zip).unwrap().len();
    let pin = dir.join("iccs-api.toml");
    let sha = sha256(&std::fs::read(&zip).unwrap());
    std::fs::write(&pin, format!("file = \"API_PKC.zip\"\nbytes = {bytes}\nsha256 = \"{sha}\"\n")).unwrap();
    zip
}

pub fn manifest(zip: &Path) -> String {
    let (bytes, sha) = (std::fs::metadata(zip).unwrap().len(), sha256(&std::fs::read(zip).unwrap()));
    let mut m = format!(
        r#"id = "field-kem"
name = "Field fixture (test)"

[source]
kind = "archive"
file = "Field Fixture.zip"
bytes = {bytes}
sha256 = "{sha}"
root = "{ROOT}"

[build]
sources = ["{{dir}}/KEM_{{label}}.c", ".common/keccak.c"]
include = ["{{dir}}", ".common"]
iccs = ["drng.c", "auxfunc.c"]
libs = ["gmp"]

[build.arch.x86_64]
defines = ["FIX_ARCH_X86=1"]

[build.arch.aarch64]
defines = ["FIX_ARCH_ARM=1"]

{KAT_AND_BENCH}
{ICCS_GROUPS}"#
    );
    let extra = |label: &str| match label {
        "f-asm" => "sources = [\"{dir}/*.S\"]\ndefines = [\"FIX_USES_ASM=1\"]\n",
        "f-gmp" => "sources = [\"{dir}/uses_gmp.c\"]\n",
        "f-100" => "kat_records = 100\n",
        "f-3" => "kat_records = 3\n",
        "f-known" => {
            "defines = [\"FIX_TWEAK=1\"]\nknown_issue = \"the fixture flips one shared-secret bit (FIX_TWEAK)\"\n"
        }
        "f-hang" => "timeout = 3\nslow = true\n",
        "f-big" => "output_cap_mib = 1\n",
        "f-x86" => "arch = [\"x86_64\"]\n",
        "f-defsym" => {
            "sources = [\"{dir}/*.S\"]\nlink_flags = [\"-Wl,--defsym=fixture_alias_zero=fixture_asm_zero\"]\n"
        }
        _ => "",
    };
    for (label, dir, _, _) in INSTANCES {
        m.push_str(&format!("\n[[instance]]\nlabel = \"{label}\"\ndir = \"{dir}\"\n{}", extra(label)));
    }
    m
}

pub fn kat_manifest() -> String {
    let mut k = String::from("# derived from the Rust model in tests/common/fixture.rs\n");
    for (label, _, n, _) in INSTANCES {
        let (mode, records) = match *label {
            "f-100" => ("strict:100", 100),
            "f-3" => ("strict:3", 3),
            _ => ("strict", 10),
        };
        k.push_str(&format!("{} {mode} {label}/KAT_KEM_{label}.txt\n", model_digest(*n, records)));
    }
    k
}

pub struct Case {
    pub tmp: tempfile::TempDir,
    pub manifest: PathBuf,
    pub zip: PathBuf,
    pub api: PathBuf,
    pub pin: PathBuf,
    pub out: PathBuf,
}

impl Case {
    pub fn new() -> Case {
        let tmp = tempfile::tempdir().unwrap();
        let tree = tmp.path().join("tree");
        write_tree(&tree);
        let zip = tmp.path().join("Field Fixture.zip");
        zip_tree(&tree, &zip);
        let api = write_api_package(tmp.path());
        let dir = tmp.path().join("manifests");
        std::fs::create_dir_all(dir.join("field-kem")).unwrap();
        std::fs::write(dir.join("field-kem.toml"), manifest(&zip)).unwrap();
        std::fs::write(dir.join("field-kem/kat.sha256"), kat_manifest()).unwrap();
        let out = tmp.path().join("out");
        Case { manifest: dir.join("field-kem.toml"), zip, api, pin: tmp.path().join("iccs-api.toml"), out, tmp }
    }

    pub fn verify(&self, extra: &[&str]) -> Output {
        let archive = format!("field-kem={}", self.zip.display());
        let api = format!("iccs-api={}", self.api.display());
        let mut args = vec!["verify", self.manifest.to_str().unwrap(), "--engine", "podman"];
        args.extend(["--archive", &archive, "--archive", &api, "--out", self.out.to_str().unwrap()]);
        args.extend(extra);
        super::require_podman();
        let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
            .args(&args)
            .env("NGCC_REPRO_ICCS_API", &self.pin)
            .output()
            .unwrap();
        eprintln!("$ xtask {}\n{}{}", args.join(" "), super::stdout(&out), String::from_utf8_lossy(&out.stderr));
        out
    }
}
