//! External sizes (`submissions/external_sizes*.csv`) and the size audit: every place
//! where what an instance reports disagrees with the catalog.

use anyhow::{bail, Context, Result};
use serde::Deserialize;

pub use crate::evidence::schema::{Basis, CatalogRow, Disagreement, Sizes};
use crate::project;

impl Basis {
    fn parse(s: &str) -> Option<Basis> {
        use serde::de::IntoDeserializer;
        let de: serde::de::value::StrDeserializer<'_, serde::de::value::Error> = s.into_deserializer();
        Basis::deserialize(de).ok()
    }
}

impl std::fmt::Display for Basis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Basis::Encoded => "encoded",
            Basis::MaximumVariable => "maximum-variable",
            Basis::NominalVariable => "nominal-variable",
        })
    }
}

/// The catalogs: `submissions/external_sizes*.csv`, one per set of columns (a KEM's, a
/// signature's), each with the header `id,instance,<catalog columns>,basis`.
pub fn catalog_paths() -> Result<Vec<camino::Utf8PathBuf>> {
    let dir = project::root().join("submissions");
    let mut paths: Vec<camino::Utf8PathBuf> = dir
        .read_dir_utf8()
        .with_context(|| format!("cannot read {dir}"))?
        .filter_map(|e| e.ok().map(|e| e.path().to_owned()))
        .filter(|p| p.file_name().is_some_and(|n| n.starts_with("external_sizes") && n.ends_with(".csv")))
        .collect();
    paths.sort();
    Ok(paths)
}

/// One catalog. Columns are the families' catalog names (`family::SizeName::field`); an
/// empty cell or `-` is a size the catalog does not know.
pub fn parse(text: &str) -> Result<Vec<CatalogRow>> {
    let mut rows = Vec::new();
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'));
    let header: Vec<&str> = lines.next().map(|(_, l)| l.trim()).unwrap_or_default().split(',').collect();
    let n = header.len();
    if n < 4 || header[..2] != ["id", "instance"] || header[n - 1] != "basis" {
        bail!("unexpected header {:?}: want id,instance,<sizes>,basis", header.join(","));
    }
    let sizes: Vec<&str> = header[2..n - 1]
        .iter()
        .map(|c| crate::family::size_by_field(c).map(|s| s.id).with_context(|| format!("unknown size column {c:?}")))
        .collect::<Result<_>>()?;
    for (line_no, line) in lines {
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        let ctx = || format!("line {}: {line:?}", line_no + 1);
        if f.len() != n {
            bail!("{}: expected {n} fields", ctx());
        }
        let mut row = Sizes::default();
        for (id, cell) in sizes.iter().zip(&f[2..n - 1]) {
            if !cell.is_empty() && *cell != "-" {
                row.0.insert((*id).to_owned(), cell.parse::<u64>().with_context(ctx)?);
            }
        }
        let basis = Basis::parse(f[n - 1])
            .with_context(|| format!("{}: basis must be encoded, maximum-variable or nominal-variable", ctx()))?;
        rows.push(CatalogRow { id: f[0].into(), instance: f[1].into(), sizes: row, basis });
    }
    Ok(rows)
}

pub fn load() -> Result<Vec<CatalogRow>> {
    let mut rows = Vec::new();
    for path in catalog_paths()? {
        let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
        rows.extend(parse(&text).with_context(|| format!("invalid size catalog {path}"))?);
    }
    Ok(rows)
}

pub fn row<'a>(catalog: &'a [CatalogRow], id: &str, instance: &str) -> Option<&'a CatalogRow> {
    catalog.iter().find(|r| r.id == id && r.instance == instance)
}

/// Every size the catalog knows that differs from the API's, or a row that is missing.
pub fn audit(catalog: &[CatalogRow], id: &str, instance: &str, api: &Sizes) -> Vec<Disagreement> {
    let disagreement = |field: &str, api, catalog, basis| Disagreement {
        id: id.into(),
        instance: instance.into(),
        field: field.into(),
        api,
        catalog,
        basis,
    };
    let Some(row) = row(catalog, id, instance) else {
        return vec![disagreement("row", None, None, None)];
    };
    let field = |size: &str| crate::family::all().into_iter().flat_map(|f| f.sizes).find(|s| s.id == size);
    row.sizes
        .0
        .iter()
        .filter(|(size, c)| api.0.get(*size).is_some_and(|a| a != *c))
        .map(|(size, &c)| {
            let name = field(size).map_or(size.as_str(), |s| s.field);
            disagreement(name, Some(api.get(size)), Some(c), Some(row.basis))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_catalog_parses_and_holds_the_seed_sizes() {
        let c = load().unwrap();
        let brqc = row(&c, "kem-07", "BRQC-128").unwrap();
        assert_eq!(brqc.sizes, Sizes::of([("pk", 1954), ("sk", 2066), ("ct", 3844), ("ss", 64)]));
        assert_eq!(row(&c, "kem-04", "bag_piglet_512").unwrap().sizes.get("ct"), 8204);
    }

    #[test]
    fn audit_names_each_disagreeing_field() {
        let c = parse("id,instance,public_key,secret_key,ciphertext,shared_secret,basis\nx,a,10,20,30,4,encoded\n")
            .unwrap();
        let d = audit(&c, "x", "a", &Sizes::of([("pk", 10), ("sk", 20), ("ct", 46), ("ss", 4)]));
        assert_eq!(d.len(), 1);
        assert_eq!((d[0].field.as_str(), d[0].api, d[0].catalog), ("ciphertext", Some(46), Some(30)));
        assert_eq!(d[0].basis, Some(Basis::Encoded));
        assert!(audit(&c, "x", "a", &Sizes::of([("pk", 10), ("sk", 20), ("ct", 30), ("ss", 4)])).is_empty());
        assert_eq!(audit(&c, "x", "b", &Sizes::default())[0].field, "row");
        assert!(parse("id,instance,public_key,secret_key,ciphertext,shared_secret,basis\nx,a,1,2,3,4,guess\n").is_err());
        // A signature catalog: its own columns; an unknown secret key is no disagreement.
        let s = parse("id,instance,public_key,secret_key,signature,basis\ny,b,738,-,561,encoded\n").unwrap();
        assert_eq!(s[0].sizes, Sizes::of([("pk", 738), ("sig", 561)]));
        assert!(audit(&s, "y", "b", &Sizes::of([("pk", 738), ("sk", 9), ("sig", 561)])).is_empty());
        assert!(parse("id,instance,public_key,colour,basis\n").is_err(), "an unknown column is refused");
    }
}
