//! (being written: see the crate's contract)
