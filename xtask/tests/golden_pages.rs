//! The pages of the golden evidence set (`common/golden_set.rs`) on `x86_1`, rendered by
//! `pages::report::render`, equal the committed pages `tests/golden/pages/<id>.md` byte
//! for byte: a change of any page (wording, number format, order, a section of one
//! family) fails here until the expected page is rendered again and read through.
//!
//! Beside the byte comparison, each family's page is read for what the seed pages
//! (the published NGCC performance reports) have: the same section headings in the same
//! order, the items of section 1, the title and the sentence under it, section 7 as a
//! table, and every figure in the seed's number form. Those forms are restated here in
//! this test's own words, so a change of the renderer cannot carry the expectation along.
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

fn render(id: &str) -> String {
    let tmp = tempfile::tempdir().unwrap();
    golden_set::write(tmp.path());
    let layout = Layout::new(Utf8Path::from_path(tmp.path()).unwrap(), "x86_1");
    xtask::pages::report::render(&layout, &golden_set::submission(id)).unwrap()
}

fn check(id: &str) {
    let page = render(id);
    seed_structure(id, &page);
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

/// The KEM's page shows its libraries as `verify` read them (the golden summary holds
/// the readings of real ML-KEM builds): code size in §5, exported and flagged names.
#[test]
fn the_kem_page_shows_code_size_and_flagged_exports() {
    let page = render(KEM);
    let sizes = table(part(&page, "5. "), "| instance | text (bytes) |");
    assert_eq!(sizes[0], ["ML-KEM-512", "74065", "54584", "1320", "8", "ELF64 LSB x86-64"]);
    assert_eq!(sizes.len(), 3);
    let exports = part(&page, "Exported symbols");
    assert_eq!(table(exports, "| instance | exported | flagged |")[0], ["ML-KEM-512", "142", "95"]);
    let flagged = table(exports, "| instances | rule |");
    let keccak = flagged.iter().find(|r| r[1] == "keccak").expect("a keccak row");
    assert_eq!(keccak[0], "ML-KEM-512, ML-KEM-768, ML-KEM-1024");
    assert!(keccak[3].split(", ").any(|n| n == "shake128") && !keccak[3].contains("PQCLEAN"), "{keccak:?}");
    assert!(flagged.iter().all(|r| r[1] != "randombytes"), "ML-KEM's library takes randombytes from the program");
    // A page of a set without readings says so instead.
    assert!(part(&render(SIG), "Exported symbols").contains("Not read: the KAT summary holds no reading"));
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

/// Section headings in the seed pages' order: 1–6 numbered, "Symmetric primitives" after
/// 6, then this harness's "Constant time", then 7. A hash function has no §6 (no keys or
/// ciphertexts), no symmetric-primitive profile and no secret for the constant-time check.
fn headings(id: &str) -> Vec<&'static str> {
    let mut h = vec![
        "1. Basic information",
        "2. Assessment environment",
        "3. Functional testing (KAT)",
        "4. Performance",
        "5. Resource consumption",
    ];
    if id != HASH {
        h.extend(["6. Transmission and storage overhead", "Symmetric primitives", "Constant time"]);
    }
    h.extend(["Exported symbols", "7. Raw evidence index"]);
    h
}

/// The part of `page` from the line `from` to the next `## ` heading.
fn part<'a>(page: &'a str, from: &str) -> &'a str {
    let start = page.find(&format!("\n## {from}")).unwrap_or_else(|| panic!("no {from}")) + 1;
    let rest = &page[start..];
    rest[3..].find("\n## ").map_or(rest, |end| &rest[..end + 3])
}

/// The rows (cells) of the first table in `text` whose header starts with `head`.
fn table<'a>(text: &'a str, head: &str) -> Vec<Vec<&'a str>> {
    let start = text.find(head).unwrap_or_else(|| panic!("no table {head} in {text}"));
    text[start..]
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| l.trim_matches('|').split(" | ").map(str::trim).collect())
        .collect()
}

/// Cycles as the seed pages print them: a whole number under a thousand, else two
/// decimals and k, M or G (`3.03 M`).
fn is_cycles(c: &str) -> bool {
    match c.rsplit_once(' ') {
        Some((n, "k" | "M" | "G")) => n.split_once('.').is_some_and(|(i, d)| digits(i) && d.len() == 2 && digits(d)),
        _ => digits(c),
    }
}

/// At most three significant digits (`45`, `1.45`, `123`, `1.83e+03`).
fn is_three_digits(c: &str) -> bool {
    let mantissa = c.split_once("e+").map_or(c, |(m, e)| if digits(e) { m } else { "x" });
    let sig: String = mantissa.chars().filter(char::is_ascii_digit).collect::<String>();
    let sig = sig.trim_start_matches('0');
    digits(&mantissa.replace('.', "")) && !sig.is_empty() && sig.len() <= 3
}

/// A time: three significant digits and ns, µs, ms or s.
fn is_time(c: &str) -> bool {
    c.rsplit_once(' ').is_some_and(|(n, u)| is_three_digits(n) && ["ns", "µs", "ms", "s"].contains(&u))
}

fn digits(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_digit())
}

/// `n (trials × iterations)` with n their product.
fn is_count(c: &str) -> bool {
    let Some((n, rest)) = c.split_once(" (") else { return false };
    let Some((t, i)) = rest.trim_end_matches(')').split_once(" × ") else { return false };
    let parse = |s: &str| s.parse::<u64>().ok();
    matches!((parse(n), parse(t), parse(i.split(')').next().unwrap_or(""))), (Some(n), Some(t), Some(i)) if n == t * i)
}

fn seed_structure(id: &str, page: &str) {
    let found: Vec<&str> = page.lines().filter_map(|l| l.strip_prefix("## ")).collect();
    assert_eq!(found, headings(id), "{id}: section headings");
    let title = page.lines().next().unwrap();
    assert!(
        title.starts_with(&format!("# {id} ")) && title.ends_with(" — performance on x86-64 (system x86_1)"),
        "{title}"
    );
    assert!(
        page.contains("following the structure of the NICCS x86 self-assessment guide, §3.5 (1)–(7). Not a submitter self-assessment."),
        "{id}: the sentence under the title"
    );
    let basic = part(page, "1. ");
    let items: Vec<&str> = basic.lines().filter_map(|l| l.strip_prefix("- ")?.split(':').next()).collect();
    for item in common::SEED_ITEMS {
        assert!(items.contains(&item), "{id}: no item {item} in {basic}");
    }
    assert!(basic.contains(" — security evaluation: "), "{id}: {basic}");
    performance_forms(id, part(page, "4. "));
    for row in table(part(page, "5. "), "| instance | operation | static") {
        assert!(digits(row[2]) && row[3].ends_with(" KiB") && row[4].ends_with(" KiB"), "{id}: {row:?}");
    }
    // Code size beside the RSS figures: whole byte counts, or why the library was not read.
    let resources = part(page, "5. ");
    assert!(resources.contains("as binutils' `size` counts them"), "{id}: {resources}");
    if let Some(at) = resources.find("| instance | text (bytes) |") {
        for row in table(&resources[at..], "| instance | text (bytes) |") {
            assert!(row[1..5].iter().all(|c| digits(c)), "{id}: {row:?}");
        }
    } else {
        assert!(resources.contains("Not read: "), "{id}: {resources}");
    }
    let index = part(page, "7. ");
    assert!(index.contains("Paths are relative to `x86_1/` in the evidence set"), "{id}: {index}");
    let rows = table(index, "| instance | item | file |");
    assert!(rows.iter().any(|r| r[1].starts_with("KAT log") && r[1].contains("(sha256 ") && r[2].starts_with("kat/")));
    assert!(rows.iter().any(|r| r[1].starts_with("timing ") && r[2].starts_with("records/")), "{id}: {index}");
    assert!(!page.contains("**"), "{id}: no bold markup the site would show literally");
}

/// Section 4's figures, each in its seed form: per operation (KEM, signature, key
/// exchange) mean cycles, mean time, ops/s, median trial, n; per message (hash) mean
/// cycles, cycles/byte with one decimal, mean time, MB/s and n, and ratios to the
/// baselines with two decimals.
fn performance_forms(id: &str, perf: &str) {
    if id == HASH {
        let rows = table(perf, "| instance | message |");
        assert!(!rows.is_empty());
        for r in rows {
            let one_decimal = r[3].split_once('.').is_some_and(|(i, d)| digits(i) && d.len() == 1 && digits(d));
            assert!(
                is_cycles(r[2]) && one_decimal && is_time(r[4]) && is_three_digits(r[5]) && is_count(r[6]),
                "{r:?}"
            );
        }
        for r in table(perf, "| instance | message | × SHA-256") {
            assert!(
                r[2..].iter().all(|c| c.strip_suffix(" ×").is_some_and(|n| n.len() == 4 && n.as_bytes()[1] == b'.')),
                "{r:?}"
            );
        }
        return;
    }
    let rows = table(perf, "| instance | operation | mean cycles |");
    assert!(!rows.is_empty());
    for r in rows {
        let n = r[6].split(';').next().unwrap();
        assert!(
            is_cycles(r[2]) && is_time(r[3]) && is_three_digits(r[4]) && is_time(r[5]) && is_count(n),
            "{id}: {r:?}"
        );
    }
}

#[test]
fn the_number_forms_are_the_seed_pages() {
    // The forms themselves, on the seed's own cells and on ones it never prints.
    assert!(is_cycles("3.03 M") && is_cycles("1.07 G") && is_cycles("107.10 k") && is_cycles("796"));
    assert!(!is_cycles("107.1 k") && !is_cycles("3.0 M") && !is_cycles("3.031 M"));
    assert!(is_time("45 ms") && is_time("1.45 ms") && is_time("546 µs") && !is_time("45.12 ms"));
    assert!(is_three_digits("1.83e+03") && is_three_digits("22.2") && !is_three_digits("1830"));
    assert!(is_count("3365 (5 × 673)") && !is_count("3366 (5 × 673)"));
}

#[test]
fn section_one_gives_the_manifest_and_system_items_or_says_not_given() {
    let tmp = tempfile::tempdir().unwrap();
    golden_set::write(tmp.path());
    let layout = Layout::new(Utf8Path::from_path(tmp.path()).unwrap(), "x86_1");
    let mut sub = golden_set::submission(KEM);
    let page = xtask::pages::report::render(&layout, &sub).unwrap();
    let basic = part(&page, "1. ");
    assert!(basic.contains("- Implementation versions measured: not given"), "{basic}");
    assert!(basic.contains(" — security evaluation: not given"), "{basic}");
    assert!(basic.contains("- Measurement method: not given"), "{basic}");
    sub.implementation = Some("reference".into());
    sub.evaluation = Some("https://example.org/eval/kem.pdf".into());
    let path = layout.kat_summary(KEM);
    let mut summary: xtask::evidence::schema::Summary = xtask::evidence::schema::read(&path).unwrap().unwrap();
    summary.system_profile.method = Some("https://example.org/method/x86_1".into());
    xtask::evidence::schema::write(&path, &summary).unwrap();
    let page = xtask::pages::report::render(&layout, &sub).unwrap();
    let basic = part(&page, "1. ");
    assert!(basic.contains("- Implementation versions measured: reference\n"), "{basic}");
    assert!(
        basic.contains(" — security evaluation: [pqclean-ml-kem report](https://example.org/eval/kem.pdf)"),
        "{basic}"
    );
    assert!(basic.contains("- Measurement method: [x86_1 method](https://example.org/method/x86_1)"), "{basic}");
    assert!(
        basic.contains("- Submission: crate pqcrypto-mlkem 0.1.1 (checksum pinned in sources/Cargo.lock)"),
        "{basic}"
    );
}

#[test]
fn sections_five_and_six_say_not_measured_on_verify_only_evidence() {
    let tmp = tempfile::tempdir().unwrap();
    golden_set::write_part(tmp.path(), &["x86_1"], &[KEM]);
    let layout = Layout::new(Utf8Path::from_path(tmp.path()).unwrap(), "x86_1");
    std::fs::remove_dir_all(layout.records_dir(KEM)).unwrap();
    let page = xtask::pages::report::render(&layout, &golden_set::submission(KEM)).unwrap();
    for heading in ["5. ", "6. "] {
        let text = part(&page, heading);
        let body: Vec<&str> = text.lines().skip(1).filter(|l| !l.is_empty()).collect();
        assert_eq!(body[0], "Not measured: no timing run in this evidence set.", "{text}");
        if heading == "6. " {
            assert_eq!(body.len(), 1, "{text}");
        }
    }
    // Code size comes from verify's reading of the library: it needs no timing run.
    let sizes = table(part(&page, "5. "), "| instance | text (bytes) |");
    assert_eq!(sizes.iter().map(|r| r[0]).collect::<Vec<_>>(), ["ML-KEM-512", "ML-KEM-768", "ML-KEM-1024"]);
}
