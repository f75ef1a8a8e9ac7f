//! lab library (contract to be written).
#![forbid(unsafe_code)]
