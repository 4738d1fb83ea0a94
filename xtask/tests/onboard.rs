//! `cargo xtask onboard` on fixture archives written here, shaped like the catalog's
//! awkward KEM archives: spaces in folder names, a nested `Implementations/Implementations`
//! root, a shipped demo `main.c` and `KAT_KEM.c`, the official API package's blank
//! template beside the instances, placeholder instance names, template-mode vectors,
//! sources in subfolders, no ICCS files, hostile names; and the key-exchange fixture
//! (`common/kex_fixture.rs`), whose passes come from its shipped KAT files; a hash
//! archive whose digest widths come from its KAT files, headers and labels. Expected
//! digests come from the fixtures' Rust models, never from the code under test. The three
//! tests that verify a draft run in the container; the others read the draft only.

use std::io::Write;
use std::path::{Path, PathBuf};

mod common;

use common::fixture::{header, model_digest, model_lines, FIXTURE};
use common::xtask;
use xtask::compile::submission::Submission;

const WRAP: &str = "Cand X v1";
const REF: &str = "Implementations/Implementations/Reference_Implementation";
const HASH_WRAP: &str = "HX Hash v1";

/// One instance folder of a fixture archive.
struct Spec {
    folder: &'static str,
    /// `ALGORITHM_INSTANCE` of its header.
    name: &'static str,
    n: usize,
    /// Where its KAT file goes, below the wrapping folder.
    kat: String,
    records: usize,
    /// `_Len` values left blank (template mode).
    template: bool,
    /// Sources in `src/`, headers in `include/`, nothing beside the API header.
    nested: bool,
    /// No drng.c or auxfunc.c anywhere.
    no_iccs: bool,
    /// One more source of its own.
    extra: bool,
}

fn spec(folder: &'static str, name: &'static str, n: usize) -> Spec {
    let kat = format!("Test_Vectors/KAT_KEM_{name}.txt");
    Spec { folder, name, n, kat, records: 10, template: false, nested: false, no_iccs: false, extra: false }
}

fn kat_text(s: &Spec) -> String {
    let mut t = String::new();
    for rec in model_lines(s.n).into_iter().take(s.records) {
        for line in rec {
            let line = match line.split_once(" = ") {
                Some((k, _)) if s.template && k.ends_with("_Len") => format!("{k} ="),
                _ => line,
            };
            t.push_str(&line);
            t.push_str("\r\n");
        }
        t.push_str("\r\n");
    }
    t
}

fn put(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn copy(from: &str, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(Path::new(FIXTURE).join(from), to).unwrap();
}

/// The fixture KEM of `s` in its folder, with the files a draft must leave out.
fn write_instance(top: &Path, s: &Spec, header_name: &str) {
    let d = top.join(WRAP).join(REF).join(s.folder);
    let (src, inc) = if s.nested { (d.join("src"), d.join("include")) } else { (d.clone(), d.clone()) };
    put(&d.join(header_name), &header(s.name, s.n, ""));
    let body = std::fs::read_to_string(Path::new(FIXTURE).join("kem_body.c")).unwrap();
    put(&src.join("KEM_AlgorithmInstance.c"), &format!("#include \"{header_name}\"\n{body}"));
    for h in ["drng.h", "auxfunc.h", "mix.h", "keccak.h"] {
        copy(h, &inc.join(h));
    }
    copy("keccak.c", &src.join("keccak.c"));
    if !s.no_iccs {
        copy("drng.c", &src.join("drng.c"));
        copy("auxfunc.c", &src.join("auxfunc.c"));
    }
    if s.extra {
        put(&src.join("extra.c"), "int cand_extra_source = 1;\n");
    }
    // The shipped KAT generator, a demo and a test: the harness's rule drops them.
    for f in ["KAT_KEM.c", "main.c", "kem_test.c"] {
        put(&src.join(f), "#error never compiled\nint main(void) { return 0; }\n");
    }
    put(&top.join(WRAP).join(&s.kat), &kat_text(s));
}

/// The official API package's blank template, as several archives ship a copy of it.
fn write_template(top: &Path) {
    let d = top.join(WRAP).join("API_PKC/Implementations/Reference_Implementation/AlgorithmInstance");
    put(&d.join("KEM_AlgorithmInstance.h"), &header("AlgorithmInstance", 16, ""));
    put(&d.join("KEM_AlgorithmInstance.c"), "#include \"KEM_AlgorithmInstance.h\"\n");
}

fn zip_dir(tree: &Path, zip: &Path, links: &[(&str, &str)]) {
    common::fixture::zip_tree(tree, zip);
    if links.is_empty() {
        return;
    }
    let mut w =
        zip::ZipWriter::new_append(std::fs::OpenOptions::new().read(true).write(true).open(zip).unwrap()).unwrap();
    for (name, target) in links {
        w.add_symlink(*name, *target, zip::write::SimpleFileOptions::default()).unwrap();
    }
    w.finish().unwrap();
}

/// A fixture archive of `specs` in a fresh temporary folder.
struct Case {
    tmp: tempfile::TempDir,
    zip: PathBuf,
}

impl Case {
    fn new(specs: &[Spec], header_name: &str, links: &[(&str, &str)]) -> Case {
        let tmp = tempfile::tempdir().unwrap();
        let tree = tmp.path().join("tree");
        for s in specs {
            write_instance(&tree, s, header_name);
        }
        write_template(&tree);
        let zip = tmp.path().join("Cand X v1.zip");
        zip_dir(&tree, &zip, links);
        Case { tmp, zip }
    }

    fn dir(&self) -> PathBuf {
        self.tmp.path().join("drafts")
    }

    /// `onboard --no-verify` with a cache of its own (no container, no shared cache).
    fn draft(&self, extra: &[&str]) -> std::process::Output {
        let (zip, dir) = (self.zip.to_str().unwrap(), self.dir());
        let args = [&["onboard", zip, "--dir", dir.to_str().unwrap(), "--no-verify"][..], extra].concat();
        xtask(&args, Some(&self.tmp.path().join("cache")))
    }

    fn text(&self, id: &str) -> (String, String) {
        let m = std::fs::read_to_string(self.dir().join(format!("{id}.toml"))).unwrap();
        let k = std::fs::read_to_string(self.dir().join(id).join("kat.sha256")).unwrap();
        (m, k)
    }
}

fn awkward() -> Vec<Spec> {
    vec![spec("Cand X-128", "CandX-128", 16), spec("Cand X-256", "CandX-256", 32)]
}

/// What the tests read of a draft that this checkout's loader may not know yet.
#[derive(serde::Deserialize)]
struct Draft {
    build: DraftBuild,
    #[serde(rename = "instance")]
    instances: Vec<DraftInstance>,
}

#[derive(serde::Deserialize)]
struct DraftBuild {
    sources: Vec<String>,
    include: Vec<String>,
    #[serde(default)]
    iccs: Vec<String>,
}

#[derive(serde::Deserialize)]
struct DraftInstance {
    label: String,
    kat_records: Option<u64>,
}

fn kat_line(sha: &str, mode: &str, label: &str) -> String {
    format!("{sha} {mode} {label}/KAT_KEM_{label}.txt")
}

#[test]
fn an_awkward_archive_gets_a_draft_that_loads() {
    let c = Case::new(&awkward(), "KEM_AlgorithmInstance.h", &[]);
    let run = c.draft(&[]);
    assert!(run.status.success());
    let out = common::stdout(&run);
    assert!(out.contains("next: cargo xtask verify"), "{out}");
    let (m, k) = c.text("cand-x-v1");
    let sub = Submission::load(c.dir().join("cand-x-v1.toml").to_str().unwrap()).unwrap();
    let labels: Vec<&str> = sub.instances.iter().map(|i| i.label.as_str()).collect();
    assert_eq!(labels, ["CandX-128", "CandX-256"], "labels from ALGORITHM_INSTANCE; the blank template is left out");
    assert!(m.contains("API_PKC") && m.contains("blank template"), "the left-out template is named:\n{m}");
    let xtask::compile::submission::SourceSpec::Archive { root, sha256, .. } = &sub.source else { panic!() };
    assert_eq!(root, WRAP, "above the nested root and Test_Vectors");
    assert_eq!(sha256.as_str(), common::sha256(&std::fs::read(&c.zip).unwrap()));
    assert_eq!(sub.instances[0].dir, format!("{REF}/Cand X-128"));
    assert_eq!(
        sub.build.sources,
        ["{dir}/KEM_AlgorithmInstance.c", "{dir}/auxfunc.c", "{dir}/drng.c", "{dir}/keccak.c"]
    );
    assert_eq!(sub.build.include, ["{dir}"]);
    assert_eq!(sub.kat.api_header.as_deref(), Some("{dir}/KEM_AlgorithmInstance.h"));
    assert_eq!(sub.kat.reference.as_deref(), Some("Test_Vectors/KAT_KEM_{label}.txt"));
    for left_out in ["\"main.c\"", "\"KAT_KEM.c\"", "\"kem_test.c\""] {
        assert!(m.contains(left_out), "{left_out} is named as left out:\n{m}");
    }
    assert!(m.contains("guessed label: ALGORITHM_INSTANCE"), "{m}");
    assert!(!m.contains("iccs ="), "the tree has drng.c and auxfunc.c:\n{m}");
    for (label, n) in [("CandX-128", 16), ("CandX-256", 32)] {
        assert!(k.contains(&kat_line(&model_digest(n, false, 10), "strict", label)), "{label}:\n{k}");
    }
    // A second run keeps the draft; --force replaces it.
    let again = c.draft(&[]);
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("--force"));
    assert!(c.draft(&["--force"]).status.success());
}

#[test]
fn placeholder_names_and_template_vectors() {
    let mut a = spec("Cand X-128", "AlgorithmInstance", 16);
    a.kat = "Test_Vectors/Cand X-128/KAT_KEM_AlgorithmInstance.txt".into();
    a.template = true;
    let mut b = spec("Cand X-256", "AlgorithmInstance", 32);
    b.kat = "Test_Vectors/Cand X-256/KAT_KEM_AlgorithmInstance.txt".into();
    b.records = 3;
    let c = Case::new(&[a, b], "KEM_AlgorithmInstance.h", &[]);
    assert!(c.draft(&["--id", "cand-x"]).status.success());
    let (m, k) = c.text("cand-x");
    let doc: Draft = toml::from_str(&m).unwrap();
    let labels: Vec<&str> = doc.instances.iter().map(|i| i.label.as_str()).collect();
    assert_eq!(labels, ["Cand-X-128", "Cand-X-256"], "folder names, made plain");
    assert!(m.contains("ALGORITHM_INSTANCE is the placeholder \"AlgorithmInstance\""), "{m}");
    // One KAT file name in per-instance folders, matched by the folder.
    assert!(k.contains(&kat_line(&model_digest(16, true, 10), "nolen", "Cand-X-128")), "template mode → nolen:\n{k}");
    assert!(k.contains(&kat_line(&model_digest(32, false, 3), "strict:3", "Cand-X-256")), "3 records:\n{k}");
    assert_eq!((doc.instances[0].kat_records, doc.instances[1].kat_records), (None, Some(3)));
    assert!(m.contains("template mode"), "{m}");
    let sub = Submission::load(c.dir().join("cand-x.toml").to_str().unwrap()).unwrap();
    assert_eq!(sub.instances[1].kat_records, 3, "the loader reads what the draft says");
}

#[test]
fn sources_in_subfolders_and_no_iccs_files() {
    let mut a = spec("Cand X-128", "CandX-128", 16);
    a.nested = true;
    a.no_iccs = true;
    let c = Case::new(&[a], "KEM_AlgorithmInstance.h", &[]);
    assert!(c.draft(&[]).status.success());
    let (m, _) = c.text("cand-x-v1");
    let doc: Draft = toml::from_str(&m).unwrap();
    assert_eq!(doc.build.sources, ["{dir}/src/KEM_AlgorithmInstance.c", "{dir}/src/keccak.c"]);
    assert_eq!(doc.build.include, ["{dir}", "{dir}/include"]);
    assert_eq!(doc.build.iccs, ["drng.c", "auxfunc.c"]);
    assert!(m.contains("the instance folder holds none"), "{m}");
    assert!(m.contains("no instance's sources hold drng.c and the archive has none"), "{m}");
    let sub = Submission::load(c.dir().join("cand-x-v1.toml").to_str().unwrap()).unwrap();
    assert_eq!(sub.build.iccs, ["drng.c", "auxfunc.c"]);
    // Its verify needs the ICCS API package, and says so before anything is built.
    let missing = c.tmp.path().join("nowhere/API_PKC.zip");
    let (zip, dir) = (c.zip.to_str().unwrap(), c.dir());
    let args = ["onboard", zip, "--dir", dir.to_str().unwrap(), "--force", "--engine", "podman"];
    let run =
        xtask(&[&args[..], &["--iccs-api", missing.to_str().unwrap()]].concat(), Some(&c.tmp.path().join("cache")));
    assert_eq!(run.status.code(), Some(2));
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(err.contains("API_PKC.zip (31009 bytes"), "{err}");
    // Nothing was verified: no time, and the next command names the package it needs.
    let out = common::stdout(&run);
    assert!(!out.contains("onboard + verify"), "{out}");
    let next = out.lines().find(|l| l.starts_with("next:")).unwrap_or_default();
    assert!(next.contains(missing.to_str().unwrap()) && next.contains("--archive iccs-api="), "{out}");
    assert!(!out.contains("fix what was guessed wrong"), "{out}");
}

#[test]
fn instances_with_other_sources_list_their_own() {
    let mut specs = awkward();
    specs[1].extra = true;
    let c = Case::new(&specs, "KEM_AlgorithmInstance.h", &[]);
    // Relative paths are the caller's.
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["onboard", "Cand X v1.zip", "--dir", "drafts", "--no-verify"])
        .current_dir(c.tmp.path())
        .env("NGCC_CACHE", c.tmp.path().join("cache"))
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let (m, _) = c.text("cand-x-v1");
    assert!(m.contains("the instances differ in their sources"), "{m}");
    let sub = Submission::load(c.dir().join("cand-x-v1.toml").to_str().unwrap()).unwrap();
    assert_eq!(sub.build.sources.len(), 4);
    assert!(sub.instances[0].sources.is_empty());
    assert_eq!(sub.instances[1].sources, ["{dir}/extra.c"]);
    assert!(sub.build.iccs.is_empty() && sub.instances.iter().all(|i| i.iccs.is_empty()));
}

#[test]
fn an_instance_without_iccs_files_takes_its_own() {
    let mut specs = awkward();
    specs[1].no_iccs = true;
    let c = Case::new(&specs, "KEM_AlgorithmInstance.h", &[]);
    assert!(c.draft(&[]).status.success());
    let sub = Submission::load(c.dir().join("cand-x-v1.toml").to_str().unwrap()).unwrap();
    assert!(sub.build.iccs.is_empty());
    assert!(sub.instances[0].iccs.is_empty());
    assert_eq!(sub.instances[1].iccs, ["drng.c", "auxfunc.c"]);
    assert_eq!(sub.instances[1].sources, Vec::<String>::new(), "drng.c and auxfunc.c of the other are its own");
}

/// One instance folder of a hash archive: the ICCS template's file names, its header's
/// width line (if any) and the KAT files shipped under `Test_Vectors/<folder>/`.
struct HashSpec {
    name: &'static str,
    /// The header's `#define` lines beside `ALGORITHM_INSTANCE`.
    defines: &'static str,
    /// (part, text) of each shipped KAT file.
    kats: Vec<(&'static str, String)>,
}

/// A short KAT text in the official driver's shape at width `bits` (CRLF, as shipped).
fn hash_kat(part: &str, bits: u32, blank: bool) -> String {
    let dst = if blank { String::new() } else { format!("{:02X}", bits / 8).repeat((bits / 8) as usize) };
    let msg =
        if part == "2_12" { "Msg = 00" } else { "Msg_Seed = \r\nMsg_Exp = 0000000000000000 .... 0000000000000000" };
    format!("Msg_Len = 8\r\n{msg}\r\nDst_Len = {bits}\r\nDst = {dst}\r\n\r\n").repeat(2)
}

/// The hash fixture (tests/fixture/hash_body.c: SHA-256) laid out as an NGCC hash archive.
fn write_hash_instance(top: &Path, s: &HashSpec) {
    let d = top.join(HASH_WRAP).join("Implementations/Reference_Implementation").join(s.name);
    let h = "CryptHash_AlgorithmInstance.h";
    let decl = "int CryptHash(int digest_len_bits, const unsigned char *msg, unsigned long long msg_len_bits, \
                unsigned char *digest);";
    let guard = "CRYPTHASH_ALGORITHM_INSTANCE_H";
    let header = format!(
        "#ifndef {guard}\n#define {guard}\n#define OUTPUT_BLANK_TEST_VECTORS 0\n#define ALGORITHM_INSTANCE \"{}\"\n\
         {}{decl}\n#endif\n",
        s.name, s.defines
    );
    put(&d.join(h), &header);
    let body = std::fs::read_to_string(Path::new(FIXTURE).join("hash_body.c")).unwrap();
    put(&d.join("CryptHash_AlgorithmInstance.c"), &format!("#include \"{h}\"\n{body}"));
    copy("hash_drng.c", &d.join("drng.c"));
    copy("drng.h", &d.join("drng.h"));
    copy("mix.h", &d.join("mix.h"));
    put(&d.join("KAT_CryptHash.c"), "#error the shipped KAT generator is never compiled\n");
    for (part, text) in &s.kats {
        put(&top.join(HASH_WRAP).join("Test_Vectors").join(s.name).join(format!("KAT_{part}_{}.txt", s.name)), text);
    }
}

/// The hash archive's instances: widths from the KAT files, the header and the label;
/// an XOF; an XOF left out (only its label's number); a template-mode file.
fn hash_specs() -> Vec<HashSpec> {
    let model = |part| common::hash_fixture::kat_text(part, 256).replace('\n', "\r\n");
    let all = vec![
        ("2_12", model("2_12")),
        ("2_23", model("2_23")),
        ("2_33", hash_kat("2_33", 256, false)),
        ("Loop", hash_kat("Loop", 256, false)),
    ];
    vec![
        HashSpec { name: "HX-256", defines: "#define DIGEST_BIT_LENGTH 256\n", kats: all },
        // One header for every width, as Garnet's: the shipped files say otherwise.
        HashSpec { name: "HX-384", defines: "#define DIGEST_BIT_LENGTH 512\n", kats: two("2_12", "2_23", 384) },
        HashSpec { name: "HX-768", defines: "", kats: vec![] },
        HashSpec {
            name: "HX-XOF-256",
            defines: "#define DIGEST_BIT_LENGTH 1280\n#define SQUEEZE_BIT_LENGTH 1280\n",
            kats: vec![],
        },
        HashSpec { name: "HX-XOF-512", defines: "", kats: vec![] },
        HashSpec {
            name: "HX-1024",
            defines: "#define DIGEST_BIT_LENGTH 1024\n",
            kats: vec![("2_12", hash_kat("2_12", 1024, true))],
        },
    ]
}

fn two(a: &'static str, b: &'static str, bits: u32) -> Vec<(&'static str, String)> {
    vec![(a, hash_kat(a, bits, false)), (b, hash_kat(b, bits, false))]
}

/// The hash archive and its draft (`onboard --no-verify`): (tmp, manifest, zip).
fn hash_draft() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let specs = hash_specs();
    specs.iter().for_each(|s| write_hash_instance(&tmp.path().join("tree"), s));
    let zip = tmp.path().join("HX Hash v1.zip");
    zip_dir(&tmp.path().join("tree"), &zip, &[]);
    let dir = tmp.path().join("drafts");
    let args = ["onboard", zip.to_str().unwrap(), "--dir", dir.to_str().unwrap(), "--no-verify", "--id", "hx"];
    let run = xtask(&args, Some(&tmp.path().join("cache")));
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    (tmp, dir.join("hx.toml"), zip)
}

#[test]
fn a_hash_archive_gets_widths_xof_and_four_kat_files() {
    let (tmp, m, _) = hash_draft();
    let sub = Submission::load(m.to_str().unwrap()).unwrap();
    assert_eq!(sub.family, xtask::family::FamilyId::Hash);
    assert_eq!(sub.kat.program, ["driver:iccs_hash_kat.c"]);
    assert_eq!(sub.kat.file, "{label}.txt", "the driver's files are KAT_2_12_<file> ...");
    assert_eq!(sub.kat.api_header.as_deref(), Some("{dir}/CryptHash_AlgorithmInstance.h"));
    assert_eq!(sub.kat.reference, None, "one reference path cannot name four files");
    assert_eq!(sub.build.sources, ["{dir}/CryptHash_AlgorithmInstance.c", "{dir}/drng.c"]);
    assert!(sub.build.iccs.is_empty() && sub.profile.is_none());
    let widths: Vec<(&str, Option<u32>, bool)> =
        sub.instances.iter().map(|i| (i.label.as_str(), i.digest_bits, i.xof)).collect();
    let want = [
        ("HX-1024", Some(1024), false),
        ("HX-256", Some(256), false),
        ("HX-384", Some(384), false),
        ("HX-768", Some(768), false),
        ("HX-XOF-256", Some(1280), true),
    ];
    assert_eq!(widths, want, "nothing says HX-XOF-512's width: it is left out");
    let text = std::fs::read_to_string(&m).unwrap();
    for said in [
        "left out HX-XOF-512",
        "an XOF label's number is not always its output length",
        "guessed digest width: the shipped KAT files' `Dst_Len = 384`; but `#define DIGEST_BIT_LENGTH`",
        "says 512",
        "guessed digest width: the label's trailing number 768",
        "guessed: an extendable-output instance: ALGORITHM_INSTANCE \"HX-XOF-256\" names an XOF",
        "template mode",
    ] {
        assert!(text.contains(said), "{said:?} not in\n{text}");
    }
    // Each line: the digest of the shipped text under the strict rule (CRLF dropped).
    let strict = common::hash_fixture::strict_digest;
    let mut want: Vec<String> = Vec::new();
    for s in hash_specs().iter().filter(|s| s.name == "HX-256" || s.name == "HX-384") {
        for (part, body) in &s.kats {
            want.push(format!("{} strict {}/KAT_{part}_{}.txt", strict(body.as_bytes()), s.name, s.name));
        }
    }
    assert_eq!(want[0].split(' ').next(), Some(common::hash_fixture::kat_digest("2_12", 256).as_str()));
    let k = std::fs::read_to_string(tmp.path().join("drafts/hx/kat.sha256")).unwrap();
    let mut got: Vec<&str> = k.lines().filter(|l| !l.starts_with('#')).collect();
    got.sort();
    want.sort();
    assert_eq!(got, want, "HX-1024's template file has no line:\n{k}");
    let manifest =
        xtask::kat::Manifest::load(camino::Utf8Path::new(tmp.path().join("drafts/hx/kat.sha256").to_str().unwrap()))
            .unwrap();
    manifest.check_against(&sub).unwrap();
}

/// The one hash container run: the draft's first two files PASS against the shipped
/// (model) text; the 1 GiB file and the Loop are left for CI's time.
#[test]
fn a_hash_draft_verifies_in_the_container() {
    common::require_podman();
    let (tmp, m, zip) = hash_draft();
    let out = tmp.path().join("out");
    let args = ["verify", m.to_str().unwrap(), "--engine", "podman", "--archive", zip.to_str().unwrap()];
    let more = ["--instance", "HX-256", "--kat-files", "2_12,2_23", "--out", out.to_str().unwrap()];
    let run = xtask(&[&args[..], &more[..]].concat(), None);
    let s = common::summary(&out, "hx");
    let r = common::entry(&s, "HX-256");
    for part in ["2_12", "2_23"] {
        let f = r.files.iter().find(|f| f.part == part).unwrap();
        assert_eq!(f.status.map(|s| s.name()), Some("PASS"), "{part}: {:?}", f.message);
    }
    assert_eq!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
}

/// The key-exchange fixture's archive: a draft per instance with the passes of its
/// shipped KAT file (the header's pass functions where a template file gives none).
fn kex_draft(labels: &[&str]) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let insts = common::kex_fixture::subset(labels);
    let (_, zip) = common::kex_fixture::write_archive(tmp.path(), &insts);
    let dir = tmp.path().join("drafts");
    let args = ["onboard", zip.to_str().unwrap(), "--dir", dir.to_str().unwrap(), "--no-verify"];
    assert!(xtask(&args, Some(&tmp.path().join("cache"))).status.success());
    let m = dir.join("fixture-kex-v1.toml");
    (tmp, m, zip)
}

#[test]
fn a_key_exchange_gets_its_passes_from_the_shipped_kat() {
    let (_tmp, m, _) = kex_draft(&["kex-p0", "kex-p2", "kex-p4", "kex-template"]);
    let sub = Submission::load(m.to_str().unwrap()).unwrap();
    assert_eq!(sub.family, xtask::family::FamilyId::Kex);
    assert_eq!(sub.kat.program, ["driver:iccs_kex_kat.c"]);
    let passes: Vec<(&str, Option<u32>)> = sub.instances.iter().map(|i| (i.label.as_str(), i.passes)).collect();
    // The template file's Pass_Num is blank: the header declares passes 1 to 3.
    assert_eq!(passes, [("kex-p0", Some(0)), ("kex-p2", Some(2)), ("kex-p4", Some(4)), ("kex-template", Some(3))]);
    let text = std::fs::read_to_string(&m).unwrap();
    assert!(text.contains("# guessed passes: the shipped KAT file's Pass_Num"), "{text}");
}

#[test]
fn hostile_names_stay_values_and_links_stay_out() {
    let hostile = "Cand $(touch pwned) \"q\" 'x'";
    let mut a = spec(hostile, "../../evil; rm -rf ~", 16);
    a.kat = "Test_Vectors/KAT_KEM_x.txt".into();
    let mut b = spec("Cand\n[source]\nkind = \"crate\"", "CandZ", 24);
    b.kat = "Test_Vectors/KAT_KEM_CandZ.txt".into();
    let s = vec![a, spec("Cand X-256", "CandX-256", 32), b];
    let inst = format!("{WRAP}/{REF}/Cand X-256");
    let links = [(format!("{inst}/evil.c"), "/etc/passwd"), (format!("{inst}/up"), "../../..")];
    let links: Vec<(&str, &str)> = links.iter().map(|(n, t)| (n.as_str(), *t)).collect();
    let c = Case::new(&s, "KEM_$(touch pwned2).h", &links);
    // A folder whose name holds `{label}` cannot be a manifest dir.
    let braces = c.tmp.path().join("tree2");
    std::fs::rename(c.tmp.path().join("tree"), &braces).unwrap();
    write_instance(&braces, &spec("Cand {label}", "CandY", 16), "KEM_Y.h");
    let zip = c.tmp.path().join("Cand X v1.zip");
    std::fs::remove_file(&zip).unwrap();
    zip_dir(&braces, &zip, &links);

    assert!(c.draft(&["--id", "hostile"]).status.success());
    let (m, k) = c.text("hostile");
    let sub = Submission::load(c.dir().join("hostile.toml").to_str().unwrap()).unwrap();
    let dirs: Vec<&str> = sub.instances.iter().map(|i| i.dir.as_str()).collect();
    let want =
        [format!("{REF}/Cand\n[source]\nkind = \"crate\""), format!("{REF}/{hostile}"), format!("{REF}/Cand X-256")];
    assert_eq!(dirs, want, "the folder names, exactly, as values");
    assert_eq!(sub.instances[0].label, "CandZ");
    let injected = !matches!(sub.source, xtask::compile::submission::SourceSpec::Archive { .. });
    assert!(!injected, "a folder name wrote a [source] of its own");
    assert_eq!(sub.instances[1].label, "Cand-touch-pwned-q-x", "not the header's `../../evil; rm -rf ~`");
    assert_eq!(sub.kat.api_header.as_deref(), Some("{dir}/KEM_$(touch pwned2).h"));
    assert!(m.contains("Cand {label}") && m.contains("cannot be named by a manifest pattern"), "{m}");
    assert_eq!(sub.instances.len(), 3);
    assert!(!m.contains("evil.c") && !m.contains("\"up\""), "links are not in the tree:\n{m}");
    assert!(!k.contains(".."), "{k}");
    assert!(k.lines().filter(|l| !l.starts_with('#')).all(|l| l.split_whitespace().count() == 3), "{k}");
    for entry in std::fs::read_dir(c.dir()).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        assert!(name == "hostile.toml" || name == "hostile", "{name}");
    }
    let cache = c.tmp.path().join("cache/sources");
    for e in walkdir::WalkDir::new(&cache) {
        let e = e.unwrap();
        assert!(!e.path_is_symlink(), "a link was extracted: {}", e.path().display());
        assert!(!e.file_name().to_string_lossy().starts_with("pwned"));
    }
}

#[test]
fn an_entry_leaving_the_archive_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let zip = tmp.path().join("Escape.zip");
    let mut w = zip::ZipWriter::new(std::fs::File::create(&zip).unwrap());
    w.start_file("../KEM_escape.h", zip::write::SimpleFileOptions::default()).unwrap();
    w.write_all(b"int kem_keygen(void);\n").unwrap();
    w.finish().unwrap();
    let dir = tmp.path().join("drafts");
    let run = xtask(&["onboard", zip.to_str().unwrap(), "--dir", dir.to_str().unwrap()], Some(&tmp.path().join("c")));
    assert!(!run.status.success());
    assert!(String::from_utf8_lossy(&run.stderr).contains("escapes the extraction folder"));
    assert!(!dir.exists() && !tmp.path().join("KEM_escape.h").exists());
}

/// The one container test: the awkward archive from nothing to PASS, timed.
/// A wrong guess is caught by the KAT driver, named with both numbers.
#[test]
fn a_key_exchange_draft_verifies_and_a_wrong_pass_guess_is_named() {
    common::require_podman();
    let (tmp, m, zip) = kex_draft(&["kex-p4", "kex-template"]);
    let out = tmp.path().join("out");
    let args = ["verify", m.to_str().unwrap(), "--engine", "podman", "--archive", zip.to_str().unwrap()];
    let run = xtask(&[&args[..], &["--out", out.to_str().unwrap()]].concat(), None);
    assert_eq!(run.status.code(), Some(1));
    let s = common::summary(&out, "fixture-kex-v1");
    assert_eq!(common::entry(&s, "kex-p4").status.name(), "PASS");
    let t = common::entry(&s, "kex-template");
    let msg = t.message.clone().unwrap_or_default();
    assert_eq!(t.status.name(), "CRYPTOFAIL");
    assert!(msg.contains("kex_get_passes_num returned=2 manifest=3"), "{msg}");
}

#[test]
fn onboard_drafts_and_verifies_in_the_container() {
    let c = Case::new(&awkward(), "KEM_AlgorithmInstance.h", &[]);
    let (dir, out) = (c.dir(), c.tmp.path().join("out"));
    let started = std::time::Instant::now();
    let args = ["onboard", c.zip.to_str().unwrap(), "--dir", dir.to_str().unwrap(), "--engine", "podman"];
    let run = xtask(&[&args[..], &["--out", out.to_str().unwrap()]].concat(), None);
    eprintln!("onboard + verify wall time: {:.1} s", started.elapsed().as_secs_f64());
    assert!(run.status.success());
    let s = common::summary(&out, "cand-x-v1");
    for label in ["CandX-128", "CandX-256"] {
        assert_eq!(common::entry(&s, label).status.name(), "PASS", "{label}");
    }
    let text = common::stdout(&run);
    assert!(text.contains("next: cargo xtask report"), "{text}");
    // The next command gives the page.
    let m = dir.join("cand-x-v1.toml");
    assert!(xtask(&["report", m.to_str().unwrap(), "--out", out.to_str().unwrap()], None).status.success());
    let page = std::fs::read_to_string(common::layout(&out).report("cand-x-v1")).unwrap();
    assert!(page.contains("CandX-128") && page.contains("PASS"), "{page}");
}

// ---- Levels laid out as Aigis-Enc+: `kat_test/` beside each level's sources ----------

const LEVELS_WRAP: &str = "Toy Enc v1";
const LEVELS_REF: &str = "Implementations/Reference_Implementation";
/// (folder, PARAMS, bytes of every object) of the toy KEM's levels.
const LEVELS: [(&str, usize, usize); 3] = [("Toy-Enc-I", 1, 16), ("Toy-Enc-II", 2, 24), ("Toy-Enc-III", 3, 32)];

/// How each level of `tests/fixture/levels` says what it builds.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Layout {
    /// The level's Makefile lists the sources (line continuations, `+=`, `$^`).
    LevelMakefile,
    /// `kat_test/Makefile` builds from `..` (`:=`, `?=`, `addprefix`) and lists no auxfunc.c.
    KatTestMakefile,
    /// Objects and a pattern rule; the common define in an included `../common.mk`.
    Objects,
    /// `$(wildcard ...)` and `$(filter-out ...)`, `${VAR}`.
    Wildcard,
    /// `kat_test/Makefile` whose recipe names its sources by shell globs (`../k*.c *.c`).
    ShellGlob,
    /// No Makefile: each level's `params.h` defines PARAMS; `#include "../api.h"` says where the sources are.
    NoMakefile,
    /// No Makefile, and the level's folder holds the speed build's `randombytes.c` too,
    /// which `kat_test/rng.c` replaces (both define `randombytes`).
    NoMakefileDevRandom,
}

const LAYOUTS: [Layout; 7] = [
    Layout::LevelMakefile,
    Layout::KatTestMakefile,
    Layout::Objects,
    Layout::Wildcard,
    Layout::ShellGlob,
    Layout::NoMakefile,
    Layout::NoMakefileDevRandom,
];

const MK_LEVEL: &str = "# Toy-Enc, one level\nCC = gcc\nCFLAGS = -O2 -Wall\nCFLAGS += -DPARAMS=@P@ -DUSE_ICCS_HASH\n\
    SRCS = kem.c hashkdf.c \\\n       kat_test/KEM_AlgorithmInstance.c kat_test/drng.c \\\n       \
    kat_test/auxfunc.c kat_test/rng.c\n\nkat: $(SRCS) kat_test/KAT_KEM.c\n\t$(CC) $(CFLAGS) $^ -o $@\n\n\
    speed: kem.c hashkdf.c randombytes.c speed.c\n\t$(CC) -O3 -DPARAMS=@P@ $^ -o $@\n";
const MK_KAT_TEST: &str = "SRCDIR := ..\nPARAMS ?= @P@\nCFLAGS := -O2 -DPARAMS=$(PARAMS)\nCFLAGS += -DUSE_ICCS_HASH\n\
    SCHEME = $(addprefix $(SRCDIR)/,kem.c hashkdf.c)\nKAT = KEM_AlgorithmInstance.c rng.c drng.c\n\
    test_kat: $(SCHEME) $(KAT) KAT_KEM.c\n\t$(CC) $(CFLAGS) $(SCHEME) $(KAT) KAT_KEM.c -L. -laux -o $@\n";
const MK_OBJECTS: &str = "include ../common.mk\n\
    OBJS = kem.o hashkdf.o $(addprefix kat_test/,KEM_AlgorithmInstance.o drng.o auxfunc.o rng.o)\n\
    CFLAGS = -O2 $(COMMON_DEFS) -DPARAMS=@P@\nkat_kem: $(OBJS)\n\t$(CC) $^ -o $@\n%.o: %.c\n\t$(CC) $(CFLAGS) -c $< -o $@\n";
const MK_WILDCARD: &str =
    "LEVEL=@P@\nSOURCES := $(filter-out randombytes.c speed.c,$(wildcard *.c)) $(wildcard kat_test/*.c)\n\
    DEFINES = -DPARAMS=${LEVEL} -DUSE_ICCS_HASH\nall: kat\nkat: $(SOURCES)\n\tgcc $(DEFINES) -o $@ $(SOURCES)\n";

const MK_GLOB: &str = "kat:\n\tgcc -O2 -DPARAMS=@P@ -DUSE_ICCS_HASH ../k*.c ../hash*.c *.c -o kat\n";

fn levels_file(name: &str) -> String {
    std::fs::read_to_string(Path::new(FIXTURE).join("levels").join(name)).unwrap()
}

/// One level of the toy KEM in `layout`.
fn write_level(d: &Path, layout: Layout, params: usize) {
    let makefile_free = matches!(layout, Layout::NoMakefile | Layout::NoMakefileDevRandom);
    for f in ["api.h", "randombytes.h", "hashkdf.c", "kem.c", "toy_xor.inc", "speed.c", "randombytes.c"] {
        if f != "randombytes.c" || layout != Layout::NoMakefile {
            put(&d.join(f), &levels_file(f));
        }
    }
    let (params_h, hashkdf_h) = (levels_file("params.h"), levels_file("hashkdf.h"));
    match makefile_free {
        true => {
            put(&d.join("params.h"), &format!("#define PARAMS {params}\n{params_h}"));
            put(&d.join("hashkdf.h"), &format!("#define USE_ICCS_HASH 1\n{hashkdf_h}"));
        }
        false => {
            put(&d.join("params.h"), &params_h);
            put(&d.join("hashkdf.h"), &hashkdf_h);
        }
    }
    let k = d.join("kat_test");
    for f in ["KEM_AlgorithmInstance.h", "KEM_AlgorithmInstance.c", "rng.c", "KAT_KEM.c"] {
        put(&k.join(f), &levels_file(&format!("kat_test/{f}")));
    }
    for f in ["drng.c", "drng.h", "auxfunc.c", "auxfunc.h", "mix.h"] {
        copy(f, &k.join(f));
    }
    let p = params.to_string();
    let (at, text) = match layout {
        Layout::LevelMakefile => (d.join("Makefile"), MK_LEVEL),
        Layout::KatTestMakefile => (k.join("Makefile"), MK_KAT_TEST),
        Layout::Objects => (d.join("Makefile"), MK_OBJECTS),
        Layout::Wildcard => (d.join("makefile"), MK_WILDCARD),
        Layout::ShellGlob => (k.join("Makefile"), MK_GLOB),
        Layout::NoMakefile | Layout::NoMakefileDevRandom => return,
    };
    put(&at, &text.replace("@P@", &p));
}

/// The toy KEM's archive in `layout`, with the model's KAT text of each level.
fn levels_archive(tmp: &Path, layout: Layout) -> PathBuf {
    let top = tmp.join("tree").join(LEVELS_WRAP);
    for (folder, params, _) in LEVELS {
        write_level(&top.join(LEVELS_REF).join(folder), layout, params);
    }
    put(&top.join(LEVELS_REF).join("common.mk"), "COMMON_DEFS = -DUSE_ICCS_HASH\n");
    for (_, params, n) in LEVELS {
        put(&top.join(format!("Test_Vectors/KAT_KEM_Toy-enc{params}.txt")), &common::fixture::model_text(n));
    }
    let zip = tmp.join("Toy Enc v1.zip");
    zip_dir(&tmp.join("tree"), &zip, &[]);
    zip
}

/// `onboard --no-verify` of the toy KEM in `layout`: (tmp, manifest text, loaded draft).
fn levels_draft(layout: Layout) -> (tempfile::TempDir, String, Submission) {
    let tmp = tempfile::tempdir().unwrap();
    let zip = levels_archive(tmp.path(), layout);
    let dir = tmp.path().join("drafts");
    let args = ["onboard", zip.to_str().unwrap(), "--dir", dir.to_str().unwrap(), "--no-verify", "--id", "toy"];
    let run = xtask(&args, Some(&tmp.path().join("cache")));
    assert!(run.status.success(), "{layout:?}: {}", String::from_utf8_lossy(&run.stderr));
    let m = dir.join("toy.toml");
    let sub = Submission::load(m.to_str().unwrap()).unwrap();
    (tmp, std::fs::read_to_string(&m).unwrap(), sub)
}

#[test]
fn a_level_makefile_gives_the_folder_sources_defines_and_labels() {
    let (tmp, m, sub) = levels_draft(Layout::LevelMakefile);
    let labels: Vec<&str> = sub.instances.iter().map(|i| i.label.as_str()).collect();
    assert_eq!(labels, ["Toy-enc1", "Toy-enc2", "Toy-enc3"], "ALGORITHM_INSTANCE with each level's PARAMS:\n{m}");
    let dirs: Vec<&str> = sub.instances.iter().map(|i| i.dir.as_str()).collect();
    let want: Vec<String> = LEVELS.iter().map(|(f, _, _)| format!("{LEVELS_REF}/{f}")).collect();
    assert_eq!(dirs, want, "the folder holding the sources, not kat_test/");
    let kat_test = ["KEM_AlgorithmInstance.c", "drng.c", "auxfunc.c", "rng.c"].map(|f| format!("{{dir}}/kat_test/{f}"));
    let want: Vec<String> =
        ["{dir}/kem.c".to_owned(), "{dir}/hashkdf.c".to_owned()].into_iter().chain(kat_test).collect();
    assert_eq!(sub.build.sources, want, "the kat target's list, without KAT_KEM.c, randombytes.c or speed.c");
    assert_eq!(sub.build.defines, ["USE_ICCS_HASH"]);
    let defines: Vec<&[String]> = sub.instances.iter().map(|i| i.defines.as_slice()).collect();
    assert_eq!(defines, [["PARAMS=1"], ["PARAMS=2"], ["PARAMS=3"]]);
    assert!(sub.build.include.contains(&"{dir}/kat_test".to_owned()), "{:?}", sub.build.include);
    assert_eq!(sub.kat.api_header.as_deref(), Some("{dir}/kat_test/KEM_AlgorithmInstance.h"));
    assert!(!sub.takes_iccs(), "the archive ships drng.c and auxfunc.c:\n{m}");
    assert!(m.contains("expanded from its macros with \"PARAMS=1 USE_ICCS_HASH\""), "{m}");
    assert!(m.contains("target \"kat\""), "{m}");
    let k = std::fs::read_to_string(tmp.path().join("drafts/toy/kat.sha256")).unwrap();
    for (_, params, n) in LEVELS {
        let label = format!("Toy-enc{params}");
        assert!(k.contains(&kat_line(&model_digest(n, false, 10), "strict", &label)), "{label}:\n{k}");
    }
}

#[test]
fn an_archive_with_its_own_auxfunc_never_takes_the_official_one() {
    // kat_test/Makefile lists no auxfunc.c, but hashkdf.c calls it: the archive's copy is taken.
    let (_tmp, m, sub) = levels_draft(Layout::KatTestMakefile);
    assert!(!sub.takes_iccs(), "{m}");
    assert!(sub.build.sources.contains(&"{dir}/kat_test/auxfunc.c".to_owned()), "{:?}", sub.build.sources);
    assert!(m.contains("auxfunc.c is not among them, so the archive's own \"kat_test/auxfunc.c\" is taken"), "{m}");
    assert!(m.contains("target \"test_kat\" in \"kat_test/Makefile\""), "one reason for every level:\n{m}");
    let dirs: Vec<&str> = sub.instances.iter().map(|i| i.dir.as_str()).collect();
    assert_eq!(dirs[0], format!("{LEVELS_REF}/Toy-Enc-I"), "the folder above the Makefile's, where `..` points");
    assert_eq!(sub.build.defines, ["USE_ICCS_HASH"]);
}

/// Every layout from the archive to a verdict in the container, each level against the
/// model's digests: the share that PASSes without an edit is printed, and must be all.
#[test]
fn level_layouts_onboard_to_pass() {
    common::require_podman();
    // Each layout is an archive, a draft and an evidence folder of its own: three at a
    // time, in the order of LAYOUTS (each verify runs one short container after another).
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..3 {
            scope.spawn(|| {
                while let Some(&layout) = LAYOUTS.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)) {
                    let pass = level_layout_passes(layout);
                    results.lock().unwrap().push((layout, pass));
                }
            });
        }
    });
    let results = results.into_inner().unwrap();
    let passed: Vec<Layout> =
        LAYOUTS.into_iter().filter(|l| results.iter().any(|(layout, pass)| layout == l && *pass)).collect();
    eprintln!("layouts drafted to PASS without an edit: {} of {}", passed.len(), LAYOUTS.len());
    assert_eq!(passed, LAYOUTS);
}

/// One layout from the archive to its verdicts: whether all three instances PASS.
fn level_layout_passes(layout: Layout) -> bool {
    let tmp = tempfile::tempdir().unwrap();
    let zip = levels_archive(tmp.path(), layout);
    let (dir, out) = (tmp.path().join("drafts"), tmp.path().join("out"));
    let started = std::time::Instant::now();
    let args = ["onboard", zip.to_str().unwrap(), "--dir", dir.to_str().unwrap(), "--id", "toy"];
    let run = xtask(&[&args[..], &["--engine", "podman", "--out", out.to_str().unwrap()]].concat(), None);
    let s = common::summary(&out, "toy");
    let statuses: Vec<&str> = s.instances.iter().map(|i| i.status.name()).collect();
    eprintln!("{layout:?}: {statuses:?} in {:.1} s", started.elapsed().as_secs_f64());
    statuses == ["PASS"; 3] && run.status.success()
}

#[test]
fn without_a_makefile_the_sources_are_where_the_header_includes_from() {
    let (_tmp, m, sub) = levels_draft(Layout::NoMakefileDevRandom);
    let labels: Vec<&str> = sub.instances.iter().map(|i| i.label.as_str()).collect();
    assert_eq!(labels, ["Toy-enc1", "Toy-enc2", "Toy-enc3"], "PARAMS from each level's params.h:\n{m}");
    assert_eq!(sub.instances[0].dir, format!("{LEVELS_REF}/Toy-Enc-I"));
    let want = [
        "hashkdf.c",
        "kem.c",
        "kat_test/KEM_AlgorithmInstance.c",
        "kat_test/auxfunc.c",
        "kat_test/drng.c",
        "kat_test/rng.c",
    ];
    let want: Vec<String> = want.iter().map(|f| format!("{{dir}}/{f}")).collect();
    assert_eq!(sub.build.sources, want, "randombytes.c (replaced by kat_test/rng.c) and speed.c left out");
    assert!(m.contains("define the same functions: \"randombytes.c\""), "{m}");
    assert!(sub.build.defines.is_empty() && !sub.takes_iccs(), "{m}");
}
