//! Derive macro for FerroDDS topic types (contract to be written).
#![forbid(unsafe_code)]
