//! The committed header `include/ferrodds.h` is what cbindgen generates from the crate
//! now: a change to the C API that is not reflected in the header fails here.
//! `FERRODDS_UPDATE_HEADER=1 cargo test -p ferrodds-c --test header` rewrites it.

use std::path::Path;

#[test]
fn header_is_up_to_date() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml"))
        .unwrap_or_else(|e| panic!("cbindgen.toml: {e}"));
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_crate(dir)
        .with_config(config)
        .generate()
        .unwrap_or_else(|e| panic!("cbindgen could not generate the header: {e}"))
        .write(&mut generated);
    let path = dir.join("include/ferrodds.h");
    if std::env::var_os("FERRODDS_UPDATE_HEADER").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        committed == generated,
        "{} differs from what cbindgen generates now; regenerate it with \
         FERRODDS_UPDATE_HEADER=1 cargo test -p ferrodds-c --test header",
        path.display()
    );
}
