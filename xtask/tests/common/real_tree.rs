//! A tree laid out as real NGCC archives are, for the shipped kem-07 (BRQC) manifest: the
//! bundled XKCP Keccak layer (opt64, with `.macros` rounds, `.inc` sponges, a times4
//! fallback and an AVX2 folder no one compiles), a table file without a C extension, a
//! `.c` file included by another, `../common/` reached outside the include path, a
//! header found only in another instance's tree, the submitted KAT text beside the
//! sources, a Makefile and a demo. All of it is code written for this project
//! (`tests/fixture/real_tree/`); the KEM is the fixture's, so digests come from the
//! Rust model, and it never calls Keccak.

use std::path::{Path, PathBuf};

use super::fixture::{header, model_digest, model_text, zip_tree};
use super::sha256;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixture");
pub const ID: &str = "kem-07";
const WRAP: &str = "BRQC";
const ROOT: &str = "Implementations/Reference_Implementation";
/// (label, rbc folder's M), as kem-07's manifest names them.
pub const INSTANCES: &[(&str, &str)] = &[("BRQC-128", "127"), ("BRQC-256", "163"), ("BRQC-512", "229")];
/// Object bytes of the fixture KEM.
const N: usize = 16;
/// The include folder added to kem-07's: the first instance's, which alone holds
/// `brqc_shared.h`.
const SHARED: &str = "BRQC-128/lib/shared";

/// The archive, a manifest folder (`kem-07.toml`, `kem-07/kat.sha256`) and a place for
/// evidence, in a folder of their own.
pub struct Tree {
    pub tmp: tempfile::TempDir,
    pub zip: PathBuf,
    pub manifest: PathBuf,
}

impl Tree {
    pub fn new() -> Tree {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("tree").join(WRAP).join(ROOT);
        for (label, m) in INSTANCES {
            write_instance(&root.join(label), label, m);
        }
        std::fs::create_dir_all(root.join(SHARED)).unwrap();
        std::fs::write(root.join(SHARED).join("brqc_shared.h"), "#define BRQC_SHARED_LEVEL 1\n").unwrap();
        let zip = tmp.path().join("BRQC.zip");
        zip_tree(&tmp.path().join("tree"), &zip);
        let manifest = manifest_dir(&tmp.path().join("m"), &zip);
        Tree { tmp, zip, manifest }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.tmp.path().join(rel)
    }
}

/// A file of the template tree.
pub fn template(rel: &str) -> PathBuf {
    Path::new(FIXTURE).join("real_tree").join(rel)
}

fn write_instance(dir: &Path, label: &str, m: &str) {
    copy_tree(&Path::new(FIXTURE).join("real_tree"), dir, m);
    for f in ["drng.h", "drng.c", "auxfunc.h", "auxfunc.c", "mix.h", "keccak.h"] {
        std::fs::copy(Path::new(FIXTURE).join(f), dir.join(f)).unwrap();
    }
    std::fs::write(dir.join(format!("src/rbc-{m}/rbc_params.h")), format!("#define RBC_FIELD_M {m}\n")).unwrap();
    std::fs::write(dir.join(format!("KEM_{label}.h")), header(label, N, "")).unwrap();
    let body = std::fs::read_to_string(Path::new(FIXTURE).join("kem_body.c")).unwrap();
    std::fs::write(dir.join(format!("KEM_{label}.c")), format!("#include \"KEM_{label}.h\"\n{body}")).unwrap();
    // Beside the sources, as BRQC ships them: the KAT text, its generator and a demo.
    std::fs::write(dir.join(format!("KAT_KEM_{label}.txt")), model_text(N)).unwrap();
    std::fs::write(dir.join("KAT_KEM.c"), "#error the shipped KAT generator must never be compiled\n").unwrap();
    std::fs::write(dir.join("main_brqc.c"), "#error the demo must never be compiled\n").unwrap();
}

/// Copy the template, its `src/rbc` folder as `src/rbc-<m>`.
fn copy_tree(from: &Path, to: &Path, m: &str) {
    for entry in walkdir::WalkDir::new(from) {
        let entry = entry.unwrap();
        let rel =
            entry.path().strip_prefix(from).unwrap().to_str().unwrap().replace("src/rbc", &format!("src/rbc-{m}"));
        let dest = to.join(rel);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
        } else {
            std::fs::copy(entry.path(), &dest).unwrap();
        }
    }
}

/// kem-07's shipped manifest with the fixture archive pinned in its `[source]` and one
/// include folder more; its digests from the model.
fn manifest_dir(dir: &Path, zip: &Path) -> PathBuf {
    let shipped = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../submissions/kem-07.toml")).unwrap();
    let (start, end) = (shipped.find("[source]").unwrap(), shipped.find("[build]").unwrap());
    let source = format!(
        "[source]\nkind = \"archive\"\nfile = \"BRQC.zip\"\nbytes = {}\nsha256 = \"{}\"\nroot = \"{ROOT}\"\n\n",
        std::fs::metadata(zip).unwrap().len(),
        sha256(&std::fs::read(zip).unwrap())
    );
    let wrapper = "\"{dir}/lib/wrapper\",";
    assert!(shipped.contains(wrapper), "kem-07's include list changed: update this fixture");
    let text = format!("{}{source}{}", &shipped[..start], &shipped[end..])
        .replace(wrapper, &format!("{wrapper} \"{SHARED}\","));
    std::fs::create_dir_all(dir.join(ID)).unwrap();
    std::fs::write(dir.join(format!("{ID}.toml")), text).unwrap();
    let kat: String =
        INSTANCES.iter().map(|(l, _)| format!("{} strict {l}/KAT_KEM_{l}.txt\n", model_digest(N, false, 10))).collect();
    std::fs::write(dir.join(ID).join("kat.sha256"), kat).unwrap();
    dir.join(format!("{ID}.toml"))
}
