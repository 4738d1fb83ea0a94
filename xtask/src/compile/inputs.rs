//! What a build may see of the source tree. The compiler says which files it reads: a
//! dependency pass (each compile step's own command line with `-M`) runs on the tree
//! without its KAT data, and the build then sees exactly the files the manifest names
//! and the ones that pass listed, whatever their names (XKCP's `.macros`, table files,
//! a `.c` file included by another). Never a KAT file: a build that could read the
//! published KAT text could print it instead of computing it, and assembler `.incbin`,
//! which the preprocessor does not list, finds nothing it did not.

use std::collections::BTreeSet;

use anyhow::{Context, Result};
use camino::Utf8Path;

use crate::compile::recipe::{self, Plan, Step};
use crate::compile::sources::Source;
use crate::compile::submission::{Instance, Submission};
use crate::evidence::domain::Arch;

/// Extensions of KAT request and response files.
const KAT_DATA: &[&str] = &["rsp", "req", "kat"];
/// Folders of published test vectors (`Test_Vectors`, `Test_Vectors_NIST`, …).
const VECTOR_FOLDER: &str = "Test_Vectors";
/// The target every line of the dependency pass names, so a file name never parses as one.
const DEP_TARGET: &str = "ngcc-dependencies";
/// Where the dependency pass writes its listing, in its own folder.
pub const LISTING: &str = "dependencies.d";
/// The longest listing read back.
pub const LISTING_MAX: u64 = 64 << 20;

/// The tree as the dependency pass and a cmake build see it.
#[derive(Debug, Default)]
pub struct View {
    pub files: BTreeSet<String>,
    /// KAT data of any instance, left out.
    pub kat_data: BTreeSet<String>,
    /// Links, FIFOs and devices, left out (never followed).
    pub not_regular: BTreeSet<String>,
}

/// Every regular file of the tree but KAT data: the request and response files, every
/// instance's KAT file and shipped reference text, anything in a test-vector folder and
/// any `KAT_*.txt`.
pub fn view(sub: &Submission, src: &Source) -> Result<View> {
    let names: Vec<String> = sub.instances.iter().flat_map(|i| kat_files(sub, i)).collect();
    let mut view = View::default();
    for entry in walkdir::WalkDir::new(&src.root).sort_by_file_name() {
        let entry = entry.with_context(|| format!("cannot walk the source tree {}", src.root))?;
        let Some(path) = Utf8Path::from_path(entry.path()) else { continue };
        let rel = path.strip_prefix(&src.root).unwrap_or(path).to_string();
        if entry.file_type().is_dir() {
            continue;
        }
        let set = if is_kat_data(&rel, &names) {
            &mut view.kat_data
        } else if entry.file_type().is_file() {
            &mut view.files
        } else {
            &mut view.not_regular
        };
        set.insert(rel);
    }
    Ok(view)
}

impl View {
    /// The build log's lines for what no sandbox sees as it is (the first 20): a failed
    /// pass or build may have wanted it.
    pub fn not_regular_lines(&self) -> String {
        let mut lines: String = self
            .not_regular
            .iter()
            .take(20)
            .map(|rel| format!("left out of the build's inputs (not a regular file): {rel}\n"))
            .collect();
        if self.not_regular.len() > 20 {
            lines.push_str(&format!("… and {} more links or special files\n", self.not_regular.len() - 20));
        }
        lines
    }
}

fn is_kat_data(rel: &str, names: &[String]) -> bool {
    let path = Utf8Path::new(rel);
    let file = path.file_name().unwrap_or(rel);
    path.extension().is_some_and(|e| KAT_DATA.contains(&e))
        || (file.starts_with("KAT_") && path.extension() == Some("txt"))
        || path.components().any(|c| c.as_str().starts_with(VECTOR_FOLDER))
        || names.iter().any(|k| rel == k || rel.ends_with(&format!("/{k}")))
}

/// The instance's KAT file names and shipped reference KAT text, as the manifest names them.
fn kat_files(sub: &Submission, inst: &Instance) -> Vec<String> {
    let mut names = vec![inst.expand(&sub.kat.file)];
    names.extend(sub.kat_files(inst).unwrap_or_default().into_iter().map(|(_, f)| f));
    names.extend(sub.kat.reference.iter().map(|r| inst.expand(r)));
    names
}

/// One sandboxed step that lists in [`LISTING`], for every compiler step of `plan`, the
/// files its preprocessor reads (`-M`: the step's own flags, sources and force-includes,
/// no output). None for a plan with no compiler step (cmake sees the whole view).
pub fn dependency_pass(plan: &Plan) -> Option<Step> {
    let commands: Vec<String> = plan.steps.iter().filter_map(dependency_command).collect();
    if commands.is_empty() {
        return None;
    }
    let script = commands.join(" && ");
    Some(Step {
        what: "dependency pass".into(),
        argv: vec!["sh".into(), "-c".into(), script],
        output: None,
        optional: false,
    })
}

fn dependency_command(step: &Step) -> Option<String> {
    if step.argv.first().map(String::as_str) != Some("gcc") {
        return None;
    }
    let mut argv = Vec::new();
    let mut args = step.argv.iter();
    while let Some(a) = args.next() {
        if a == "-o" {
            args.next();
        } else if a.ends_with(".o") && !a.starts_with('-') {
            // An object an earlier step makes (the one program's modes): nothing to read yet.
        } else {
            argv.push(a.clone());
        }
    }
    argv.extend(["-M".into(), "-MT".into(), DEP_TARGET.into()]);
    let listing = format!("{}/{LISTING}", recipe::BUILD);
    Some(format!("{} >> {}", argv.iter().map(|a| shell_quote(a)).collect::<Vec<_>>().join(" "), shell_quote(&listing)))
}

fn shell_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// The tree files (relative, normalised) that a dependency listing names under the
/// sandbox's source folder. Anything else it says (system headers, names that leave
/// the tree, garbage a hostile preprocessor run could print) names no file of the tree.
pub fn listed(listing: &str) -> BTreeSet<String> {
    let joined = listing.replace("\\\n", " ");
    let prefix = format!("{}/", recipe::SRC);
    let mut files = BTreeSet::new();
    for line in joined.lines() {
        let Some(deps) = line.strip_prefix(DEP_TARGET).and_then(|l| l.strip_prefix(':')) else { continue };
        files.extend(words(deps).iter().filter_map(|w| w.strip_prefix(&prefix)).filter_map(normalise));
    }
    files
}

/// Make's words as gcc writes them: `\ ` is a space of the name, `\#` a `#`, `$$` a `$`.
fn words(text: &str) -> Vec<String> {
    let (mut words, mut word) = (Vec::new(), String::new());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('\\', Some(&n)) if n == ' ' || n == '\t' || n == '#' => word.push(chars.next().unwrap_or(n)),
            ('$', Some('$')) => word.push(chars.next().unwrap_or('$')),
            (c, _) if c.is_whitespace() => words.extend((!word.is_empty()).then(|| std::mem::take(&mut word))),
            (c, _) => word.push(c),
        }
    }
    words.extend((!word.is_empty()).then_some(word));
    words
}

/// `a/./b/../c` as `a/c`; None for a path that leaves the tree. Lexical, which is right
/// here: the copy a sandbox sees holds no links.
fn normalise(rel: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for part in rel.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// What one build sees, and what it was refused.
#[derive(Debug)]
pub struct BuildInputs {
    pub files: BTreeSet<String>,
    /// Files of the view the build does not see.
    pub unread: usize,
}

/// The build's inputs: the files the manifest names for `inst` and those the dependency
/// pass listed (`None`: a cmake build, which sees the whole view), never KAT data.
pub fn select(
    sub: &Submission,
    inst: &Instance,
    src: &Source,
    arch: Arch,
    view: &View,
    listed: Option<&BTreeSet<String>>,
) -> Result<BuildInputs> {
    let Some(listed) = listed else {
        return Ok(BuildInputs { files: view.files.clone(), unread: 0 });
    };
    let named = recipe::named_inputs(sub, inst, src, arch)?;
    let files: BTreeSet<String> =
        named.into_iter().chain(listed.iter().cloned()).filter(|f| view.files.contains(f)).collect();
    let unread = view.files.len() - files.len();
    Ok(BuildInputs { files, unread })
}

impl BuildInputs {
    /// The build log's account of what the build saw and what it did not.
    pub fn account(&self, view: &View) -> String {
        let list = |set: &BTreeSet<String>| {
            let mut names: Vec<&str> = set.iter().map(String::as_str).take(20).collect();
            if set.len() > 20 {
                names.push("…");
            }
            names.join(", ")
        };
        let mut log = format!(
            "inputs: {} files of the tree (the manifest's and those the compiler's dependency pass listed); \
             {} other files were not read\n",
            self.files.len(),
            self.unread
        );
        if !view.kat_data.is_empty() {
            log.push_str(&format!("left out as KAT data ({}): {}\n", view.kat_data.len(), list(&view.kat_data)));
        }
        log
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_names_tree_files_only() {
        let listing = format!(
            "{DEP_TARGET}: /src/i1/a.c /usr/include/stdc-predef.h /src/i1/sub/../x/K-64.macros \\\n \
             /src/i1/a\\ b/q$$\\#:.h /src/../etc/passwd /src//i1/./t.tab\n\
             other: /src/i1/not-mine.h\n{DEP_TARGET}: /src/i1/a.c /drivers/iccs_kem_kat.c\n"
        );
        let got: Vec<String> = listed(&listing).into_iter().collect();
        assert_eq!(got, ["i1/a b/q$#:.h", "i1/a.c", "i1/t.tab", "i1/x/K-64.macros"]);
    }

    #[test]
    fn the_pass_runs_every_compiler_step_without_its_output() {
        let step = |argv: &[&str]| Step {
            what: "s".into(),
            argv: argv.iter().map(|a| (*a).to_owned()).collect(),
            output: None,
            optional: false,
        };
        let plan = Plan {
            flag_set: "x".into(),
            flags: vec![],
            steps: vec![
                step(&["gcc", "-O2", "/src/it's.c", "-o", "libinstance.so", "-lm"]),
                step(&["gcc", "-include", "/src/a.h", "/drivers/k.c", "-o", "kat", "-Wl,-rpath,$ORIGIN"]),
            ],
            run: vec![],
            modes: Default::default(),
        };
        let pass = dependency_pass(&plan).unwrap();
        assert_eq!(pass.argv[..2], ["sh", "-c"]);
        assert_eq!(
            pass.argv[2],
            format!(
                "'gcc' '-O2' '/src/it'\\''s.c' '-lm' '-M' '-MT' '{DEP_TARGET}' >> '/build/{LISTING}' && 'gcc' \
                 '-include' '/src/a.h' '/drivers/k.c' '-Wl,-rpath,$ORIGIN' '-M' '-MT' '{DEP_TARGET}' >> \
                 '/build/{LISTING}'"
            )
        );
        let cmake = Plan { steps: vec![step(&["cmake", "-S", "/src"])], ..plan };
        assert!(dependency_pass(&cmake).is_none());
    }

    #[test]
    fn kat_data_is_known_by_extension_folder_and_name() {
        let names = ["KAT_KEM_L1.txt".to_owned(), "i1/ref/kat_L1.txt".to_owned()];
        for kat in [
            "i1/PQCkemKAT_1632.rsp",
            "i1/x.req",
            "Test_Vectors_NIST/vectors.txt",
            "a/Test_Vectors/KAT_HASH_x.dat",
            "i2/KAT_KEM_L1.txt",
            "i1/ref/kat_L1.txt",
            "i1/KAT_SIGN_other.txt",
        ] {
            assert!(is_kat_data(kat, &names), "{kat}");
        }
        for code in ["i1/KAT_KEM.c", "i1/KeccakP-1600-64.macros", "i1/tables.dat", "i1/notes.txt", "i1/kat.h"] {
            assert!(!is_kat_data(code, &names), "{code}");
        }
    }

    #[test]
    fn a_build_sees_what_is_named_and_listed_and_never_kat_data() {
        use crate::compile::sources::Provenance;
        use crate::sha::Sha256Hex;
        let t = tempfile::tempdir().unwrap();
        let root = camino::Utf8PathBuf::from_path_buf(t.path().to_owned()).unwrap();
        let manifest = "id = \"t\"\nname = \"t\"\n[source]\nkind = \"archive\"\nfile = \"a.zip\"\nbytes = 1\n\
            sha256 = \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"\n[build]\n\
            sources = [\"{dir}/a.c\"]\ninclude = [\"{dir}\"]\n[kat]\nprogram = [\"driver:iccs_kem_kat.c\"]\n\
            api_header = \"{dir}/api.h\"\nfile = \"k_{label}.txt\"\n[[instance]]\nlabel = \"L1\"\ndir = \"i1\"\n\
            [[instance]]\nlabel = \"L2\"\ndir = \"i2\"\n";
        let files = [
            "i1/a.c",
            "i1/api.h",
            "i1/x/K-64.macros",
            "i1/tab",
            "i1/unused.h",
            "i1/k_L1.txt",
            "i2/a.c",
            "i2/api.h",
            "i2/k_L2.txt",
            "i1/PQCkemKAT_16.rsp",
            "Test_Vectors/v.txt",
        ];
        for f in files {
            std::fs::create_dir_all(root.join(f).parent().unwrap()).unwrap();
            std::fs::write(root.join(f), "").unwrap();
        }
        std::os::unix::fs::symlink("a.c", root.join("i1/link.h")).unwrap();
        let sub = Submission::from_text(&root.join("t.toml"), manifest).unwrap();
        let tree = Provenance::Directory {
            path: root.to_string(),
            tree_sha256: Sha256Hex::computed("b".repeat(64)),
            note: "t".into(),
        };
        let src = Source::new(root.clone(), tree, vec![]);
        let v = view(&sub, &src).unwrap();
        let kat: Vec<&str> = v.kat_data.iter().map(String::as_str).collect();
        // Another instance's KAT file is KAT data too.
        assert_eq!(kat, ["Test_Vectors/v.txt", "i1/PQCkemKAT_16.rsp", "i1/k_L1.txt", "i2/k_L2.txt"]);
        assert_eq!(v.not_regular.iter().collect::<Vec<_>>(), ["i1/link.h"]);
        assert_eq!(v.not_regular_lines(), "left out of the build's inputs (not a regular file): i1/link.h\n");
        // The pass listed a .macros file, a table without extension, another instance's
        // header and a KAT file (which it could not have seen): the last is refused.
        let listed: BTreeSet<String> =
            ["i1/x/K-64.macros", "i1/tab", "i2/api.h", "i2/k_L2.txt"].map(String::from).into();
        let seen = select(&sub, &sub.instances[0], &src, Arch::host(), &v, Some(&listed)).unwrap();
        let got: Vec<&str> = seen.files.iter().map(String::as_str).collect();
        assert_eq!(got, ["i1/a.c", "i1/api.h", "i1/tab", "i1/x/K-64.macros", "i2/api.h"]);
        assert_eq!(seen.unread, v.files.len() - 5);
        let account = seen.account(&v);
        assert!(account.contains("left out as KAT data (4): Test_Vectors/v.txt, i1/PQCkemKAT_16.rsp"), "{account}");
        // cmake sees the whole view, still without KAT data.
        let all = select(&sub, &sub.instances[0], &src, Arch::host(), &v, None).unwrap();
        assert_eq!(all.files, v.files);
    }
}
