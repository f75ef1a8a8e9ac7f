//! perftest binary.
fn main() {}
