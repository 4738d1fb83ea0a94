//! Property tests of the parsers that read hostile or user input: the archive
//! extractor, submission manifests, kat.sha256 files and the canonical KAT rule.
//! Cases per property are set below; CI runs them all on every change.

use proptest::prelude::*;

use crate::kat::{self, Canonical, Mode};

fn mode() -> impl Strategy<Value = Mode> {
    prop_oneof![Just(Mode::Raw), Just(Mode::Strict), Just(Mode::Nolen)]
}

/// KAT-like text: record starts, length lines, blanks, CR, tabs, stray bytes.
fn kat_text() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"Count = ".to_vec()),
        Just(b"count =".to_vec()),
        Just(b"PK_Len = 3".to_vec()),
        Just(b"SS = AB".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b" \t".to_vec()),
        Just(b"  Count = 9".to_vec()),
        proptest::collection::vec(any::<u8>(), 0..8),
    ];
    proptest::collection::vec(piece, 0..40).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn canonical_streaming_equals_whole_in_any_pieces(
        raw in kat_text(), mode in mode(), records in proptest::option::of(0usize..5), cut in 1usize..17,
    ) {
        let whole = kat::canonical(&raw, mode, records);
        let mut c = Canonical::new(mode, records, Vec::new());
        for piece in raw.chunks(cut) {
            c.update(piece);
        }
        prop_assert_eq!(c.finish().unwrap(), whole);
    }

    #[test]
    fn canonical_text_is_a_fixed_point(raw in kat_text(), mode in prop_oneof![Just(Mode::Strict), Just(Mode::Nolen)]) {
        let once = kat::canonical(&raw, mode, None);
        prop_assert_eq!(kat::canonical(&once, mode, None), once.clone());
        // Every canonical line ends in LF and has no CR or trailing blank.
        for line in once.split_inclusive(|&b| b == b'\n') {
            prop_assert!(line.ends_with(b"\n") && !line.contains(&b'\r'));
            prop_assert!(!line.ends_with(b" \n") && !line.ends_with(b"\t\n") && line.len() > 1);
        }
    }

    #[test]
    fn kat_manifest_lines_never_panic(text in "\\PC{0,200}") {
        let _ = kat::parse(&text);
    }

    #[test]
    fn kat_manifest_lines_round_trip(
        sha in "[0-9a-f]{64}", mode in mode(), records in proptest::option::of(1usize..50),
        label in "[A-Za-z0-9_-]{1,12}", file in "[A-Za-z0-9_.-]{1,20}",
    ) {
        prop_assume!(sha != crate::sha::EMPTY);
        let m = match mode { Mode::Raw => "raw", Mode::Strict => "strict", Mode::Nolen => "nolen" };
        let r = records.map(|n| format!(":{n}")).unwrap_or_default();
        let e = kat::parse(&format!("{sha} {m}{r} {label}/{file}\n")).unwrap();
        prop_assert_eq!(e.len(), 1);
        prop_assert_eq!((e[0].sha256.as_str(), e[0].mode, e[0].records), (sha.as_str(), mode, records));
        prop_assert_eq!((e[0].label.as_str(), e[0].file.as_str()), (label.as_str(), file.as_str()));
    }
}

/// A shipped manifest, to mutate.
fn shipped(id: &str) -> String {
    std::fs::read_to_string(crate::project::root().join("submissions").join(format!("{id}.toml"))).unwrap()
}

/// `text` with a few byte-level edits (delete, insert, replace) at chosen places.
fn mutated(text: &str, edits: &[(usize, u8, u8)]) -> String {
    let mut b = text.as_bytes().to_vec();
    for &(at, op, byte) in edits {
        let at = at % (b.len() + 1);
        match op % 3 {
            0 if at < b.len() => {
                b.remove(at);
            }
            1 => b.insert(at, byte),
            _ if at < b.len() => b[at] = byte,
            _ => {}
        }
    }
    String::from_utf8_lossy(&b).into_owned()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn mutated_manifests_never_panic(
        id in prop_oneof![Just("kem-07"), Just("pqclean-ml-kem"), Just("liboqs")],
        edits in proptest::collection::vec((any::<usize>(), any::<u8>(), prop_oneof![Just(b'.'), Just(b'/'), Just(b'"'), Just(b'{'), Just(b'='), any::<u8>()]), 1..6),
    ) {
        let text = mutated(&shipped(id), &edits);
        let path = camino::Utf8PathBuf::from(format!("/fuzz/{id}.toml"));
        if let Ok(sub) = crate::compile::submission::Submission::from_text(&path, &text) {
            // Whatever parses has only plain relative paths.
            for inst in &sub.instances {
                for p in sub.build.sources.iter().chain(&sub.build.include).chain(&sub.build.never_compile) {
                    let p = inst.expand(p);
                    prop_assert!(crate::compile::submission::check_rel_path(p.strip_suffix("/*.c").unwrap_or(&p)).is_ok(), "{}", p);
                }
            }
        }
    }
}

/// A small valid zip (and the same files as a tar), to mutate.
fn archives() -> (Vec<u8>, Vec<u8>) {
    use std::io::Write;
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default();
    zip.add_directory("top/", opts).unwrap();
    zip.start_file("top/a.c", opts).unwrap();
    zip.write_all(b"int a;\n").unwrap();
    zip.start_file("top/sub/b.h", opts).unwrap();
    zip.write_all(&[b'x'; 300]).unwrap();
    let zip = zip.finish().unwrap().into_inner();
    let mut tar = tar::Builder::new(Vec::new());
    let mut h = tar::Header::new_ustar();
    h.set_size(7);
    h.set_mode(0o755);
    h.set_cksum();
    tar.append_data(&mut h, "top/a.c", &b"int a;\n"[..]).unwrap();
    (zip, tar.into_inner().unwrap())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    #[test]
    fn hostile_archives_never_panic_or_escape(
        pick in 0u8..3, edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..12),
        noise in proptest::collection::vec(any::<u8>(), 0..600),
    ) {
        let (zip, tar) = archives();
        let mut bytes = match pick { 0 => zip, 1 => tar, _ => noise };
        let len = bytes.len().max(1);
        for (at, byte) in edits {
            if let Some(b) = bytes.get_mut(at % len) {
                *b = byte;
            }
        }
        let t = tempfile::tempdir().unwrap();
        let root = camino::Utf8Path::from_path(t.path()).unwrap();
        let file = root.join("input");
        std::fs::write(&file, &bytes).unwrap();
        let dest = root.join("dest");
        std::fs::create_dir(&dest).unwrap();
        let limits = crate::compile::extract::ExtractLimits { max_bytes: 1 << 20, max_entries: 100, max_ratio: 1000 };
        let _ = crate::compile::extract::unpack(&std::fs::File::open(&file).unwrap(), "input", &dest, limits);
        // Nothing was written beside `dest`, nothing inside is executable or a link.
        let names: Vec<_> = std::fs::read_dir(root).unwrap().map(|e| e.unwrap().file_name()).collect();
        prop_assert_eq!(names.len(), 2);
        for e in walkdir::WalkDir::new(&dest) {
            let e = e.unwrap();
            prop_assert!(!e.file_type().is_symlink());
            if e.file_type().is_file() {
                use std::os::unix::fs::PermissionsExt;
                prop_assert_eq!(e.metadata().unwrap().permissions().mode() & 0o111, 0);
            }
        }
    }
}
