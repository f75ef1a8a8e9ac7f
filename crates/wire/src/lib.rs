//! FerroDDS wire layer (contract to be written).
#![forbid(unsafe_code)]
