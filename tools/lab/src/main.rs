//! lab binary.
fn main() {}
