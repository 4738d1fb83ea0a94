//! The pages of the golden evidence set (`common/golden_set.rs`) on `x86_1`, rendered by
//! `pages::report::render`, equal the committed pages `tests/golden/pages/<id>.md` byte
//! for byte: a change of any page (wording, number format, order, a section of one
//! family) fails here until the expected page is rendered again and read through.
//!
//! To write the expected pages after an intended change:
//! `NGCC_BLESS_PAGES=1 cargo test -p xtask --test golden_pages`, then read the diff.

mod common;

use camino::Utf8Path;
use common::golden_set::{self, HASH, KEM, SIG};
use xtask::evidence::Layout;

fn expected(id: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/pages").join(format!("{id}.md"))
}

fn check(id: &str) {
    let tmp = tempfile::tempdir().unwrap();
    golden_set::write(tmp.path());
    let layout = Layout::new(Utf8Path::from_path(tmp.path()).unwrap(), "x86_1");
    let page = xtask::pages::report::render(&layout, &golden_set::submission(id)).unwrap();
    let path = expected(id);
    if std::env::var_os("NGCC_BLESS_PAGES").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &page).unwrap();
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if page != want {
        let first = page.lines().zip(want.lines()).position(|(a, b)| a != b).unwrap_or(0);
        panic!(
            "the {id} page differs from {} from line {}:\n  rendered: {:?}\n  expected: {:?}\n\n{page}",
            path.display(),
            first + 1,
            page.lines().nth(first),
            want.lines().nth(first)
        );
    }
}

#[test]
fn the_kem_page_equals_the_committed_page() {
    check(KEM);
}

#[test]
fn the_signature_page_equals_the_committed_page() {
    check(SIG);
}

#[test]
fn the_hash_page_equals_the_committed_page() {
    check(HASH);
}

#[test]
fn the_key_exchange_page_equals_the_committed_page() {
    check(golden_set::KEX);
}
