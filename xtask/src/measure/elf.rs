//! An instance's library read by the host from its ELF bytes, never run: its code size
//! (`.text`/`.data`/`.bss` as binutils' `size` counts them) and the names it exports,
//! with the names flagged that another library or the harness would define in the same
//! process (the clash rule, [`RULES`]), as PQClean's namespace test refuses names
//! without its scheme's prefix.
//!
//! The library was written by the candidate's build: [`read`] opens it without
//! following a link, reads at most [`MAX_FILE_BYTES`], checks the bytes against the
//! digest the host recorded after the build (`build.json`, which no sandbox reaches)
//! and parses those very bytes, every offset and size bounds-checked (the `object`
//! crate's ELF reader borrows from the bytes, it allocates nothing a header asks for).
//! What it keeps is bounded too: at most [`MAX_NAMES`] names of at most
//! [`MAX_NAME_BYTES`] bytes each. A file that cannot be read is a record with its
//! error, naming the file, never a panic or a failed run.

use std::collections::{BTreeMap, BTreeSet};

use camino::Utf8Path;
use object::elf;
use object::read::elf::{FileHeader, SectionHeader, Sym};
use object::Endianness;

use crate::evidence::schema::{Clash, CodeSize, LibraryElf};
use crate::project;

/// The largest library read (far above any candidate's: ML-KEM's is under 100 KiB).
pub const MAX_FILE_BYTES: u64 = 256 << 20;
/// The most exported names a record lists (all are counted and checked).
pub const MAX_NAMES: usize = 4096;
/// The longest name a record keeps; a longer one is cut and ends in `…`.
pub const MAX_NAME_BYTES: usize = 200;

/// One clash rule: the names it flags and why they clash.
pub struct Rule {
    pub id: &'static str,
    /// Exact names.
    pub names: &'static [&'static str],
    /// Name beginnings, compared without regard to ASCII case.
    pub prefixes: &'static [&'static str],
    /// Name endings, compared as they are.
    pub suffixes: &'static [&'static str],
    pub why: &'static str,
}

/// The clash rules, in the order a name is tried (the first that matches flags it).
pub const RULES: &[Rule] = &[
    Rule {
        id: "program",
        names: &["main", "_start"],
        prefixes: &[],
        suffixes: &[],
        why: "a program's entry point: the harness's driver defines `main`, so a library's own is a second \
              program in the process",
    },
    Rule {
        id: "harness",
        names: &[],
        prefixes: &["ngcc_"],
        suffixes: &[],
        why: "the harness's own prefix (`drivers/`: the channel, the `ngcc_mode_*` entry points the dispatcher \
              takes weakly): a library's definition replaces the harness's code or state",
    },
    Rule {
        id: "randombytes",
        names: &["randombytes", "randombytes_init", "randombytes_buf"],
        prefixes: &[],
        suffixes: &["_randombytes"],
        why: "the NIST API's randomness source, which the KAT generator (`rng.c`) and the harness's timing \
              drivers (`nist_shared.h`) define: every library in the process binds to the first definition, so \
              one library's randomness replaces another's, or the harness's",
    },
    Rule {
        id: "nist-rng",
        names: &[
            "AES256_CTR_DRBG_Update",
            "AES256_ECB",
            "DRBG_ctx",
            "seedexpander",
            "seedexpander_init",
            "handleErrors",
        ],
        prefixes: &[],
        suffixes: &[],
        why: "the NIST reference `rng.c` and seed expander, which every NIST KAT generator and PQClean's common \
              code carry under these names",
    },
    Rule {
        id: "iccs-drng",
        names: &["drng_algorithm", "init_random_number", "get_random_number", "sm3hash", "pseudohash", "pseudoXOF"],
        prefixes: &[],
        suffixes: &[],
        why: "the ICCS API package's DRNG and hash helpers (`drng.c`, `auxfunc.c`): the harness's drivers own \
              `drng_algorithm`, and every ICCS library carries the official functions under the same names",
    },
    Rule {
        id: "keccak",
        names: &["shake", "KeccakF1600"],
        prefixes: &[
            "keccak",
            "sha3_",
            "shake128",
            "shake256",
            "cshake",
            "kmac",
            "tuplehash",
            "parallelhash",
            "fips202",
        ],
        suffixes: &[],
        why: "a Keccak, SHA-3 or SHAKE entry point (FIPS 202, SP 800-185) without a namespace: PQClean's common \
              `fips202.c`, the Keccak team's code and many candidates define these names, with their own \
              state layouts",
    },
    Rule {
        id: "sha2-aes",
        names: &[],
        prefixes: &["sha1", "sha224", "sha256", "sha384", "sha512", "aes128", "aes192", "aes256", "aes_"],
        suffixes: &[],
        why: "a SHA-2 or AES entry point without a namespace: PQClean's common `sha2.c`/`aes.c` and OpenSSL's \
              libcrypto (`SHA256`, `AES_encrypt`) define these names",
    },
    Rule {
        id: "api",
        names: &[
            "crypto_kem_keypair",
            "crypto_kem_keypair_derand",
            "crypto_kem_enc",
            "crypto_kem_enc_derand",
            "crypto_kem_dec",
            "crypto_sign_keypair",
            "crypto_sign",
            "crypto_sign_open",
            "crypto_sign_signature",
            "crypto_sign_verify",
            "crypto_encrypt_keypair",
            "crypto_encrypt",
            "crypto_encrypt_open",
            "kem_keygen",
            "kem_enc",
            "kem_dec",
            "sig_keygen",
            "sig_sign",
            "sig_verify",
            "kex_init_a",
            "kex_init_b",
            "kex_pass",
            "kex_derive_a",
            "kex_derive_b",
            "CryptHash",
        ],
        prefixes: &["kem_get_", "sig_get_", "kex_get_"],
        suffixes: &[],
        why: "an API entry point without a namespace (the NIST API's `crypto_*`, the ICCS API's `kem_*`, \
              `sig_*`, `kex_*`): two candidates in one process, or a candidate and liboqs, bind to one \
              definition (PQClean's namespace test refuses them)",
    },
    Rule {
        id: "libc",
        names: &[
            "memcpy",
            "memmove",
            "memset",
            "memcmp",
            "memchr",
            "strlen",
            "strcpy",
            "strncpy",
            "strcmp",
            "strncmp",
            "strcat",
            "strchr",
            "strdup",
            "malloc",
            "calloc",
            "realloc",
            "free",
            "aligned_alloc",
            "posix_memalign",
            "abort",
            "exit",
            "atexit",
            "printf",
            "fprintf",
            "sprintf",
            "snprintf",
            "puts",
            "putchar",
            "fopen",
            "fclose",
            "fread",
            "fwrite",
            "fflush",
            "rand",
            "srand",
            "random",
            "srandom",
            "getrandom",
            "getentropy",
            "arc4random",
            "arc4random_buf",
            "time",
            "clock",
            "clock_gettime",
            "gettimeofday",
            "qsort",
            "bzero",
            "explicit_bzero",
            "memset_s",
            "read",
            "write",
            "open",
            "close",
            "syscall",
            "mmap",
            "munmap",
            "mprotect",
            "signal",
            "raise",
            "abs",
            "labs",
            "floor",
            "ceil",
            "sqrt",
            "log",
            "exp",
            "pow",
        ],
        prefixes: &[],
        suffixes: &[],
        why: "a name the C library defines: the dynamic linker binds every reference in the process (the \
              harness's, libc's own) to the first definition, the library's",
    },
    Rule {
        id: "reserved",
        names: &[],
        prefixes: &[],
        suffixes: &[],
        why: "a name C reserves to the implementation (two leading underscores, or one and a capital letter: \
              C11 7.1.3), where the compiler's runtime, libc and the harness's link-time wrappers (`__wrap_*`) \
              define theirs",
    },
];

/// Names the static linker itself defines in a shared object: never flagged.
const LINKER_NAMES: &[&str] = &["__bss_start", "_edata", "_end", "__end__", "_init", "_fini"];

/// The rule that flags `name`, if any.
pub fn rule_of(name: &str) -> Option<&'static Rule> {
    if LINKER_NAMES.contains(&name) {
        return None;
    }
    let reserved = |n: &str| {
        n.starts_with("__") || n.strip_prefix('_').is_some_and(|r| r.starts_with(|c: char| c.is_ascii_uppercase()))
    };
    RULES.iter().find(|r| {
        r.names.contains(&name)
            || r.prefixes.iter().any(|p| name.get(..p.len()).is_some_and(|h| h.eq_ignore_ascii_case(p)))
            || r.suffixes.iter().any(|s| name.ends_with(s))
            || (r.id == "reserved" && reserved(name))
    })
}

/// Flagged names by rule, each rule's list bounded.
#[derive(Debug, Default)]
pub struct Flagged(BTreeMap<usize, BTreeSet<String>>);

impl Flagged {
    pub fn add(&mut self, name: &str) {
        let Some(rule) = rule_of(name) else { return };
        let i = RULES.iter().position(|r| std::ptr::eq(r, rule)).unwrap_or_default();
        let set = self.0.entry(i).or_default();
        set.insert(name.to_owned());
        if set.len() > MAX_NAMES {
            set.pop_last();
        }
    }

    /// The clashes, in the rules' order.
    pub fn clashes(self) -> Vec<Clash> {
        self.0
            .into_iter()
            .map(|(i, symbols)| Clash {
                rule: RULES[i].id.to_owned(),
                why: RULES[i].why.to_owned(),
                symbols: symbols.into_iter().collect(),
            })
            .collect()
    }
}

/// The flagged names of `names`, grouped by rule in the rules' order.
pub fn clashes<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<Clash> {
    let mut f = Flagged::default();
    names.into_iter().for_each(|n| f.add(n));
    f.clashes()
}

/// The library at `path` (a build output: `sha256` is the digest the host recorded for
/// it, None when the record lists no regular file there). Never fails: what went wrong
/// is the record's `error`, in words that name the file and no folder of this machine.
pub fn read(path: &Utf8Path, sha256: Option<&str>) -> LibraryElf {
    let file = path.file_name().unwrap_or(path.as_str()).to_owned();
    let mut rec = LibraryElf {
        file: file.clone(),
        error: None,
        format: String::new(),
        size: None,
        exported_count: 0,
        exported: Vec::new(),
        clashes: Vec::new(),
    };
    let fail = |mut rec: LibraryElf, why: String| {
        rec.error = Some(format!("{file}: {why}").replace(path.as_str(), &file));
        rec
    };
    let Some(sha256) = sha256 else {
        return fail(rec, "the build record lists no regular file of this name".into());
    };
    let data = match project::read_regular(path, MAX_FILE_BYTES) {
        Ok(d) => d,
        Err(e) => return fail(rec, format!("{e:#}")),
    };
    let actual = project::sha256_hex(&data);
    if actual != sha256 {
        return fail(rec, format!("its bytes have SHA-256 {actual}, not the {sha256} the build record holds"));
    }
    match parse(&data) {
        Ok(p) => {
            rec.format = p.format;
            rec.size = Some(p.size);
            rec.exported_count = p.exported_count;
            rec.clashes = p.clashes;
            rec.exported = p.names.into_iter().collect();
            rec
        }
        Err(e) => fail(rec, format!("not a well-formed ELF file: {e}")),
    }
}

/// What [`parse`] reads of an ELF file.
#[derive(Debug)]
pub struct Parsed {
    pub format: String,
    pub size: CodeSize,
    pub exported_count: u64,
    /// The first [`MAX_NAMES`] exported names, sorted, each cut at [`MAX_NAME_BYTES`].
    pub names: BTreeSet<String>,
    /// Every exported name the clash rule flags (each rule's list bounded).
    pub clashes: Vec<Clash>,
}

/// Parse an ELF file's section headers and dynamic symbol table (32 or 64 bits, either
/// byte order). Every offset and count is checked against `data`.
pub fn parse(data: &[u8]) -> Result<Parsed, String> {
    const MAGIC: &[u8] = b"\x7fELF";
    if data.get(..4) != Some(MAGIC) {
        return Err("no ELF magic at the start".into());
    }
    // e_ident[EI_CLASS]
    match data.get(4).copied() {
        Some(c) if c == elf::ELFCLASS64.0 => parse_as::<elf::FileHeader64<Endianness>>(data),
        Some(c) if c == elf::ELFCLASS32.0 => parse_as::<elf::FileHeader32<Endianness>>(data),
        Some(c) => Err(format!("unknown ELF class {c}")),
        None => Err("shorter than an ELF identification".into()),
    }
}

fn parse_as<H: FileHeader<Endian = Endianness>>(data: &[u8]) -> Result<Parsed, String> {
    let header = H::parse(data).map_err(|e| e.to_string())?;
    let endian = header.endian().map_err(|e| e.to_string())?;
    let sections = header.sections(endian, data).map_err(|e| e.to_string())?;
    if sections.is_empty() {
        return Err("no section headers".into());
    }
    let mut size = CodeSize { text: 0, data: 0, bss: 0, code: 0 };
    for s in sections.iter() {
        let flags = s.sh_flags(endian).0;
        if flags & elf::SHF_ALLOC.0 == 0 {
            continue;
        }
        let n: u64 = s.sh_size(endian).into();
        // binutils' size (Berkeley): code or read-only is text, else contents is data.
        let (exec, write) = (flags & elf::SHF_EXECINSTR.0 != 0, flags & elf::SHF_WRITE.0 != 0);
        if exec || !write {
            size.text = size.text.saturating_add(n);
        } else if s.sh_type(endian) != elf::SHT_NOBITS {
            size.data = size.data.saturating_add(n);
        } else {
            size.bss = size.bss.saturating_add(n);
        }
        if exec {
            size.code = size.code.saturating_add(n);
        }
    }
    let dynsym = sections.symbols(endian, data, elf::SHT_DYNSYM).map_err(|e| e.to_string())?;
    let strings = dynsym.strings();
    let (mut names, mut flagged, mut exported_count) = (BTreeSet::new(), Flagged::default(), 0u64);
    for sym in dynsym.iter() {
        let bind = sym.st_bind();
        let visible = matches!(sym.st_visibility(), elf::STV_DEFAULT | elf::STV_PROTECTED);
        let global = matches!(bind, elf::STB_GLOBAL | elf::STB_WEAK | elf::STB_GNU_UNIQUE);
        let named_thing = !matches!(sym.st_type(), elf::STT_SECTION | elf::STT_FILE);
        if sym.is_undefined(endian) || !visible || !global || !named_thing {
            continue;
        }
        let raw = sym.name(endian, strings).map_err(|e| e.to_string())?;
        if raw.is_empty() {
            continue;
        }
        exported_count += 1;
        let name = shown_name(raw);
        flagged.add(&name);
        names.insert(name);
        if names.len() > MAX_NAMES {
            names.pop_last();
        }
    }
    Ok(Parsed { format: format(header, endian), size, exported_count, names, clashes: flagged.clashes() })
}

/// A name as records keep it: at most [`MAX_NAME_BYTES`] bytes of the file's, a byte
/// that is not UTF-8 as U+FFFD, a control character escaped (`\n`, `\u{1b}`).
fn shown_name(raw: &[u8]) -> String {
    let text = String::from_utf8_lossy(&raw[..raw.len().min(MAX_NAME_BYTES)]);
    let mut s: String =
        text.chars().flat_map(|c| if c.is_control() { c.escape_default().collect() } else { vec![c] }).collect();
    if raw.len() > MAX_NAME_BYTES {
        s.push('…');
    }
    s
}

fn format<H: FileHeader<Endian = Endianness>>(header: &H, endian: Endianness) -> String {
    let machine = match header.e_machine(endian).0 {
        62 => "x86-64".to_owned(),
        183 => "AArch64".to_owned(),
        3 => "i386".to_owned(),
        40 => "ARM".to_owned(),
        243 => "RISC-V".to_owned(),
        n => format!("machine {n}"),
    };
    let class = if header.is_class_64() { "ELF64" } else { "ELF32" };
    let order = if header.is_little_endian() { "LSB" } else { "MSB" };
    format!("{class} {order} {machine}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use camino::Utf8PathBuf;

    /// A library of `code`, built on the host by gcc with `args` (the test's own code;
    /// nothing of a candidate's). Returns its folder (kept alive) and its path.
    fn build(code: &str, args: &[&str]) -> (tempfile::TempDir, Utf8PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let dir = Utf8Path::from_path(t.path()).unwrap().to_owned();
        std::fs::write(dir.join("lib.c"), code).unwrap();
        let lib = dir.join("libinstance.so");
        let status = std::process::Command::new("gcc")
            .args(["-O2", "-fPIC", "-shared"])
            .args(args)
            .args(["-o", lib.as_str(), dir.join("lib.c").as_str()])
            .status()
            .expect("gcc (installed by .ci/run)");
        assert!(status.success());
        (t, lib)
    }

    const LIB: &str = "#include <stddef.h>\n\
        int randombytes(unsigned char *out, size_t n) { for (size_t i = 0; i < n; i++) out[i] = (unsigned char)i; return 0; }\n\
        int ns_keypair(unsigned char *pk) { return randombytes(pk, 32); }\n\
        static int helper(int x) { return x * 3; }\n\
        __attribute__((visibility(\"hidden\"))) int ns_hidden(int x) { return helper(x) + 1; }\n\
        int ns_use(int x) { return ns_hidden(x); }\n\
        const unsigned char ns_table[300] = {1, 2, 3};\n\
        unsigned char ns_state[64] = {9};\n\
        unsigned char ns_zeros[4096];\n\
        int ns_weak(void) __attribute__((weak));\n\
        int ns_weak(void) { return ns_zeros[0] + ns_state[1]; }\n";

    /// binutils' `size` (Berkeley) on `path`: text, data, bss.
    fn size_says(path: &Utf8Path) -> (u64, u64, u64) {
        let out = std::process::Command::new("size").arg(path.as_str()).output().expect("binutils' size");
        let text = String::from_utf8(out.stdout).unwrap();
        let row: Vec<u64> =
            text.lines().nth(1).unwrap().split_whitespace().take(3).map(|n| n.parse().unwrap()).collect();
        (row[0], row[1], row[2])
    }

    fn read_built(lib: &Utf8Path) -> LibraryElf {
        let sha = project::sha256_regular(lib).unwrap();
        read(lib, Some(&sha))
    }

    #[test]
    fn a_library_built_here_reads_as_binutils_size_counts_it_with_its_exports() {
        for args in [&[][..], &["-m32", "-nostdlib"][..]] {
            let (_t, lib) = build(LIB, args);
            let rec = read_built(&lib);
            assert_eq!(rec.error, None);
            assert_eq!(rec.file, "libinstance.so");
            let size = rec.size.unwrap();
            assert_eq!((size.text, size.data, size.bss), size_says(&lib), "{args:?}");
            assert!(size.code > 0 && size.code < size.text, "{size:?}");
            assert!(size.bss >= 4096, "ns_zeros is in .bss: {size:?}");
            assert!(rec.format.starts_with(if args.is_empty() { "ELF64 LSB" } else { "ELF32 LSB" }), "{}", rec.format);
            // Defined, global or weak, default visibility; not static, hidden or undefined.
            for name in ["randombytes", "ns_keypair", "ns_use", "ns_table", "ns_state", "ns_zeros", "ns_weak"] {
                assert!(rec.exported.iter().any(|n| n == name), "{name} in {:?}", rec.exported);
            }
            for name in ["helper", "ns_hidden", "memcpy", "__cxa_finalize"] {
                assert!(!rec.exported.iter().any(|n| n == name), "{name} in {:?}", rec.exported);
            }
            assert_eq!(rec.exported_count, rec.exported.len() as u64);
            assert!(rec.exported.windows(2).all(|w| w[0] < w[1]), "sorted");
            assert_eq!(rec.clashes.len(), 1, "{:?}", rec.clashes);
            assert_eq!(
                (rec.clashes[0].rule.as_str(), &rec.clashes[0].symbols[..]),
                ("randombytes", &["randombytes".to_owned()][..])
            );
        }
    }

    #[test]
    fn the_clash_rule_flags_shared_names_and_leaves_namespaced_ones() {
        for (name, rule) in [
            ("main", "program"),
            ("ngcc_mode_kat", "harness"),
            ("randombytes", "randombytes"),
            ("PQCLEAN_randombytes", "randombytes"),
            ("randombytes_init", "randombytes"),
            ("seedexpander_init", "nist-rng"),
            ("DRBG_ctx", "nist-rng"),
            ("drng_algorithm", "iccs-drng"),
            ("get_random_number", "iccs-drng"),
            ("KeccakF1600_StatePermute", "keccak"),
            ("keccak_absorb", "keccak"),
            ("shake256", "keccak"),
            ("shake128_inc_absorb", "keccak"),
            ("sha3_512", "keccak"),
            ("SHA3_256", "keccak"),
            ("cshake128", "keccak"),
            ("sha256", "sha2-aes"),
            ("sha384", "sha2-aes"),
            ("sha384_inc_init", "sha2-aes"),
            ("SHA256_Init", "sha2-aes"),
            ("aes256_ctr", "sha2-aes"),
            ("AES_encrypt", "sha2-aes"),
            ("crypto_kem_keypair", "api"),
            ("crypto_sign_open", "api"),
            ("kem_keygen", "api"),
            ("kem_get_pk_len_bytes", "api"),
            ("CryptHash", "api"),
            ("memcpy", "libc"),
            ("getrandom", "libc"),
            ("__wrap_shake128", "reserved"),
            ("_Secret", "reserved"),
        ] {
            assert_eq!(rule_of(name).map(|r| r.id), Some(rule), "{name}");
        }
        for name in [
            "PQCLEAN_MLKEM512_CLEAN_crypto_kem_keypair",
            "PQCLEAN_MLKEM512_CLEAN_kyber_shake128_absorb",
            "OQS_SHA3_sha3_256",
            "mykeccak",
            "hash_block",
            "sha",
            "_init",
            "_fini",
            "__bss_start",
            "_edata",
            "_private",
            "main_loop",
        ] {
            assert_eq!(rule_of(name).map(|r| r.id), None, "{name}");
        }
        // Grouped by rule in the rules' order, names sorted, one entry per name.
        let c = clashes(["sha256", "randombytes", "shake128", "ns_ok", "main", "shake128", "sha3_256"]);
        let got: Vec<(&str, Vec<&str>)> =
            c.iter().map(|c| (c.rule.as_str(), c.symbols.iter().map(String::as_str).collect())).collect();
        assert_eq!(
            got,
            [
                ("program", vec!["main"]),
                ("randombytes", vec!["randombytes"]),
                ("keccak", vec!["sha3_256", "shake128"]),
                ("sha2-aes", vec!["sha256"])
            ]
        );
        assert!(c.iter().all(|c| !c.why.is_empty()));
        // Every rule has a reason and flags something.
        assert!(RULES.iter().all(|r| !r.why.is_empty()
            && (r.id == "reserved" || !r.names.is_empty() || !r.prefixes.is_empty() || !r.suffixes.is_empty())));
    }

    #[test]
    fn names_are_bounded_in_number_and_length_and_escaped() {
        let mut code = String::new();
        for i in 0..MAX_NAMES + 10 {
            code.push_str(&format!("int f{i:05}(void) {{ return {i}; }}\n"));
        }
        let long = "n".repeat(MAX_NAME_BYTES + 50);
        code.push_str(&format!("int {long}(void) {{ return 0; }}\nint memcpy_ok(void) {{ return 1; }}\n"));
        code.push_str("int main(void) { return 0; }\n");
        let (_t, lib) = build(&code, &[]);
        let rec = read_built(&lib);
        assert_eq!(rec.exported_count, (MAX_NAMES + 10 + 3) as u64);
        assert_eq!(rec.exported.len(), MAX_NAMES);
        assert_eq!(rec.exported[0], "f00000");
        // Past the list's bound, names are still checked: `main` sorts after every `f…`.
        assert_eq!(rec.clashes.iter().map(|c| c.rule.as_str()).collect::<Vec<_>>(), ["program"]);
        let shown = shown_name(long.as_bytes());
        assert_eq!(shown, format!("{}…", &long[..MAX_NAME_BYTES]));
        assert_eq!(shown_name(b"a\nb\x1b|\xff"), "a\\nb\\u{1b}|\u{fffd}");
    }

    /// Offsets of an ELF64 LSB file's header fields and section headers.
    fn u16_at(d: &[u8], at: usize) -> usize {
        u16::from_le_bytes(d[at..at + 2].try_into().unwrap()) as usize
    }
    fn u64_at(d: &[u8], at: usize) -> u64 {
        u64::from_le_bytes(d[at..at + 8].try_into().unwrap())
    }
    /// The offset of the first section header of type `sh_type`.
    fn section_of(d: &[u8], sh_type: u32) -> usize {
        let (shoff, shnum) = (u64_at(d, 0x28) as usize, u16_at(d, 0x3c));
        (0..shnum)
            .map(|i| shoff + 64 * i)
            .find(|&at| u32::from_le_bytes(d[at + 4..at + 8].try_into().unwrap()) == sh_type)
            .unwrap()
    }

    /// What a hostile build could leave as its library: each is a record with an error
    /// that names the file (and no folder of this machine), never a panic.
    #[test]
    fn a_hostile_library_is_an_error_naming_the_file_never_a_panic() {
        let (t, lib) = build(LIB, &[]);
        let dir = lib.parent().unwrap().to_owned();
        let good = std::fs::read(&lib).unwrap();
        let sha = project::sha256_hex(&good);
        let error = |bytes: &[u8]| {
            let path = dir.join("crafted.so");
            std::fs::write(&path, bytes).unwrap();
            let rec = read(&path, Some(&project::sha256_hex(bytes)));
            assert!(rec.size.is_none() && rec.exported.is_empty() && rec.clashes.is_empty(), "{rec:?}");
            let e = rec.error.unwrap();
            assert!(e.starts_with("crafted.so: ") && !e.contains(dir.as_str()), "{e}");
            e
        };
        // Not an ELF file, an empty one, a truncated one.
        assert!(error(b"#!/bin/sh\nexit 0\n").contains("no ELF magic"));
        assert!(error(b"").contains("no ELF magic"));
        assert!(error(&good[..20]).contains("not a well-formed ELF"));
        assert!(error(&good[..good.len() / 2]).contains("not a well-formed ELF"));
        // An unknown class.
        let mut bad = good.clone();
        bad[4] = 7;
        assert!(error(&bad).contains("unknown ELF class 7"));
        // Absurd section counts: the most e_shnum holds, and no section headers at all.
        let mut bad = good.clone();
        bad[0x3c..0x3e].copy_from_slice(&u16::MAX.to_le_bytes());
        error(&bad);
        let mut bad = good.clone();
        bad[0x28..0x30].copy_from_slice(&u64::MAX.to_le_bytes());
        error(&bad);
        let mut bad = good.clone();
        bad[0x3c..0x3e].copy_from_slice(&0u16.to_le_bytes());
        bad[0x28..0x30].copy_from_slice(&0u64.to_le_bytes());
        assert!(error(&bad).contains("no section headers"));
        // A symbol table that claims more than the file holds, and a name past its strings.
        let dynsym = section_of(&good, 11);
        let mut bad = good.clone();
        bad[dynsym + 32..dynsym + 40].copy_from_slice(&(1u64 << 62).to_le_bytes());
        error(&bad);
        let mut bad = good.clone();
        let first = u64_at(&good, dynsym + 24) as usize + 24; // entry 1 (entry 0 is null)
        bad[first..first + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        bad[first + 6..first + 8].copy_from_slice(&1u16.to_le_bytes()); // defined
        bad[first + 4] = 0x12; // global function
        error(&bad);
        // Absurd section sizes where no bytes are read (.bss) saturate, not overflow.
        let bss = section_of(&good, 8);
        let mut big = good.clone();
        big[bss + 32..bss + 40].copy_from_slice(&u64::MAX.to_le_bytes());
        let p = parse(&big).unwrap();
        assert_eq!(p.size.bss, u64::MAX);
        // Bytes that are not the recorded ones, no record, a link, a FIFO.
        let rec = read(&lib, Some(&project::sha256_hex(b"other")));
        assert!(rec.error.as_deref().unwrap().contains("not the") && rec.size.is_none(), "{rec:?}");
        assert!(read(&lib, None).error.unwrap().contains("lists no regular file"));
        let link = dir.join("link").join("libinstance.so");
        std::fs::create_dir(dir.join("link")).unwrap();
        std::os::unix::fs::symlink(&lib, &link).unwrap();
        let rec = read(&link, Some(&sha));
        let e = rec.error.unwrap();
        assert!(
            e.starts_with("libinstance.so: ") && e.contains("links are not followed") && !e.contains(dir.as_str()),
            "{e}"
        );
        assert!(rec.size.is_none() && rec.exported.is_empty());
        let fifo = dir.join("fifo.so");
        let c = std::ffi::CString::new(fifo.as_str()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(read(&fifo, Some(&sha)).error.unwrap().contains("not a regular file"));
        // The real file still reads: the errors above were the crafted files'.
        assert_eq!(read(&lib, Some(&sha)).error, None);
        drop(t);
    }

    /// Every single-byte change of the header, section headers and symbol table, and a
    /// seeded stream of random changes anywhere: parsed or refused, never a panic.
    #[test]
    fn mutated_libraries_never_panic() {
        let (_t, lib) = build(LIB, &[]);
        let good = std::fs::read(&lib).unwrap();
        let shoff = u64_at(&good, 0x28) as usize;
        let dynsym = u64_at(&good, section_of(&good, 11) + 24) as usize;
        let mut tried = 0;
        let mut refused = 0;
        let spots = (0..64).chain(shoff..good.len()).chain(dynsym..dynsym + 96);
        for at in spots {
            for v in [0u8, 0xff, 0x80, 1] {
                let mut bad = good.clone();
                bad[at] = v;
                tried += 1;
                refused += usize::from(parse(&bad).is_err());
            }
        }
        let mut s = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..3000 {
            let mut bad = good.clone();
            for _ in 0..4 {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let at = (s >> 33) as usize % bad.len();
                bad[at] = (s >> 24) as u8;
            }
            tried += 1;
            refused += usize::from(parse(&bad).is_err());
        }
        assert!(refused > 0 && refused < tried, "{refused} of {tried}");
    }
}
