//! Type descriptions of `@topic_type` classes and their CDR codec: Python objects to
//! XCDR1 little-endian bodies (and key forms), received bodies (XCDR1 or XCDR2, either byte
//! order) back to Python objects, and key hashes of received payloads.

use std::sync::Arc;

use ferrodds_cdr::{
    key_hash_with, CdrError, CdrReader, CdrType, CdrWriter, EncapsulationHeader, Encoding,
    Endianness, Extensibility, TopicType, XcdrVersion,
};
use pyo3::exceptions::{PyOverflowError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::pybacked::{PyBackedBytes, PyBackedStr};
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};
use pyo3::IntoPyObjectExt;

/// The CDR kind of one member (or sequence/array element).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Kind {
    Bool,
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F32,
    F64,
    /// `string` / `string<N>`.
    Str(Option<usize>),
    /// `sequence<octet>` / `sequence<octet, N>` as Python `bytes`.
    Bytes(Option<usize>),
    /// `sequence<T>` / `sequence<T, N>` as a Python list.
    Seq(Box<Kind>, Option<usize>),
    /// `T[N]` as a Python list of exactly N elements.
    Array(Box<Kind>, usize),
}

impl Kind {
    /// Size of a primitive (1, 2, 4, 8), 0 otherwise.
    fn prim_size(&self) -> usize {
        match self {
            Kind::Bool | Kind::I8 | Kind::U8 => 1,
            Kind::I16 | Kind::U16 => 2,
            Kind::I32 | Kind::U32 | Kind::F32 => 4,
            Kind::I64 | Kind::U64 | Kind::F64 => 8,
            _ => 0,
        }
    }

    /// Smallest serialized size of one value (guards allocations from wire counts).
    fn min_size(&self) -> usize {
        match self {
            Kind::Str(_) | Kind::Bytes(_) | Kind::Seq(..) => 4,
            Kind::Array(e, n) => e.min_size().saturating_mul(*n),
            k => k.prim_size(),
        }
    }

    /// Whether XCDR2 puts a DHEADER before a sequence or array of this element kind.
    fn xcdr2_dheader_as_element(&self) -> bool {
        match self {
            Kind::Array(e, _) => e.xcdr2_dheader_as_element(),
            k => k.prim_size() == 0,
        }
    }

    /// Parses a kind spec made by the Python `@topic_type` decorator: `("int32",)`,
    /// `("str", bound)`, `("bytes", bound)`, `("seq", elem, bound)`, `("array", elem, n)`.
    fn from_spec(spec: &Bound<'_, PyAny>, field: &str) -> PyResult<Kind> {
        let t = spec.cast::<PyTuple>().map_err(|_| {
            PyTypeError::new_err(format!("field '{field}': kind spec must be a tuple"))
        })?;
        let name: String = t.get_item(0)?.extract()?;
        let bound = |i: usize| -> PyResult<Option<usize>> { t.get_item(i)?.extract() };
        Ok(match name.as_str() {
            "bool" => Kind::Bool,
            "int8" => Kind::I8,
            "uint8" => Kind::U8,
            "int16" => Kind::I16,
            "uint16" => Kind::U16,
            "int32" => Kind::I32,
            "uint32" => Kind::U32,
            "int64" => Kind::I64,
            "uint64" => Kind::U64,
            "float32" => Kind::F32,
            "float64" => Kind::F64,
            "str" => Kind::Str(bound(1)?),
            "bytes" => Kind::Bytes(bound(1)?),
            "seq" => Kind::Seq(
                Box::new(Kind::from_spec(&t.get_item(1)?, field)?),
                bound(2)?,
            ),
            "array" => {
                let n: usize = t.get_item(2)?.extract()?;
                Kind::Array(Box::new(Kind::from_spec(&t.get_item(1)?, field)?), n)
            }
            other => {
                return Err(PyTypeError::new_err(format!(
                    "field '{field}': unknown CDR kind {other:?}"
                )))
            }
        })
    }

    /// XCDR1 end offset of the largest value starting at `off`; `None` if unbounded.
    fn max_end_xcdr1(&self, off: usize) -> Option<usize> {
        let align = |o: usize, a: usize| o.div_ceil(a) * a;
        match self {
            Kind::Str(b) => Some(align(off, 4) + 4 + (*b)? + 1),
            Kind::Bytes(b) => Some(align(off, 4) + 4 + (*b)?),
            Kind::Seq(e, b) => {
                let mut o = align(off, 4) + 4;
                for _ in 0..(*b)? {
                    o = e.max_end_xcdr1(o)?;
                }
                Some(o)
            }
            Kind::Array(e, n) => {
                let mut o = off;
                for _ in 0..*n {
                    o = e.max_end_xcdr1(o)?;
                }
                Some(o)
            }
            k => {
                let s = k.prim_size();
                Some(align(off, s) + s)
            }
        }
    }
}

/// One member of a topic type.
#[derive(Debug)]
pub(crate) struct Field {
    pub(crate) name: Py<PyString>,
    pub(crate) kind: Kind,
    pub(crate) key: bool,
}

/// A topic type: what the Python decorator described once, used for every sample.
#[derive(Debug)]
pub(crate) struct TypeDesc {
    pub(crate) type_name: String,
    pub(crate) extensibility: Extensibility,
    pub(crate) fields: Vec<Field>,
    pub(crate) keyed: bool,
    /// Key at most 16 bytes in XCDR1: the key hash is the padded key, not its MD5.
    pub(crate) small_key: bool,
}

impl TypeDesc {
    /// Reads `cls.__ferrodds_type__` = `(type_name, extensibility, ((name, spec, is_key), ...))`.
    pub(crate) fn from_class(cls: &Bound<'_, PyAny>) -> PyResult<TypeDesc> {
        let desc = cls.getattr("__ferrodds_type__").map_err(|_| {
            PyTypeError::new_err(format!(
                "{} is not a topic type: decorate it with @ferrodds.topic_type",
                cls.repr().map(|r| r.to_string()).unwrap_or_default()
            ))
        })?;
        let (type_name, ext, members): (String, String, Vec<Bound<'_, PyTuple>>) =
            desc.extract()?;
        let extensibility = match ext.as_str() {
            "final" => Extensibility::Final,
            "appendable" => Extensibility::Appendable,
            other => {
                return Err(PyValueError::new_err(format!(
                "type {type_name:?}: extensibility {other:?} is not supported (final, appendable)"
            )))
            }
        };
        if type_name.is_empty() {
            return Err(PyValueError::new_err("type name must not be empty"));
        }
        let mut fields = Vec::with_capacity(members.len());
        for m in members {
            let name: Bound<'_, PyString> = m.get_item(0)?.cast_into()?;
            let fname = name.to_string();
            let kind = Kind::from_spec(&m.get_item(1)?, &fname)?;
            let key: bool = m.get_item(2)?.extract()?;
            fields.push(Field {
                name: name.unbind(),
                kind,
                key,
            });
        }
        let keyed = fields.iter().any(|f| f.key);
        let mut end = Some(0usize);
        for f in fields.iter().filter(|f| f.key) {
            end = end.and_then(|o| f.kind.max_end_xcdr1(o));
        }
        Ok(TypeDesc {
            type_name,
            extensibility,
            fields,
            keyed,
            small_key: end.is_some_and(|e| e <= 16),
        })
    }
}

/// A sample as the runtime sees it: serialized by this module, not by a derived
/// `TopicType`. `KEYED`/`SMALL_KEY` give the runtime the type-level facts it needs (whether
/// there is a key, and whether its hash is the padded key or an MD5).
#[derive(Debug, Default, Clone)]
pub(crate) struct DynSample<const KEYED: bool, const SMALL_KEY: bool> {
    /// The body (after the encapsulation header): XCDR1 LE when written here, in `enc`
    /// when received.
    pub(crate) body: Vec<u8>,
    pub(crate) enc: Option<Encoding>,
    /// The key members, XCDR1 little-endian (key-only payloads of dispose/unregister).
    pub(crate) key_le: Vec<u8>,
    /// The key members, XCDR1 big-endian (the key hash input).
    pub(crate) key_be: Vec<u8>,
}

impl<const K: bool, const S: bool> CdrType for DynSample<K, S> {
    const ALIGN: usize = 8;
    const MIN_SIZE: usize = 0;
    const MAX_SIZE_XCDR1: Option<usize> = None;
    const MAX_SIZE_XCDR2: Option<usize> = None;
    const KEY_MAX_SIZE_XCDR1: Option<usize> = if S { Some(16) } else { None };
    const KEY_MAX_SIZE_XCDR2: Option<usize> = None;

    fn serialize(&self, w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
        if w.encoding() != Encoding::XCDR1_LE || w.position() != 0 {
            return Err(CdrError::UnsupportedEncapsulation(0));
        }
        w.write_raw(&self.body);
        Ok(())
    }

    fn serialize_key(&self, w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
        if w.version() != XcdrVersion::Xcdr1 || w.position() != 0 {
            return Err(CdrError::UnsupportedEncapsulation(0));
        }
        match w.encoding().endianness {
            Endianness::Big => w.write_raw(&self.key_be),
            Endianness::Little => w.write_raw(&self.key_le),
        }
        Ok(())
    }

    fn deserialize(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        let mut s = Self::default();
        s.deserialize_into(r)?;
        Ok(s)
    }

    fn deserialize_into(&mut self, r: &mut CdrReader<'_>) -> Result<(), CdrError> {
        self.enc = Some(r.encoding());
        let rest = r.read_raw(r.remaining())?;
        self.body.clear();
        self.body.extend_from_slice(rest);
        Ok(())
    }
}

impl<const K: bool, const S: bool> TopicType for DynSample<K, S> {
    // The runtime announces the DynamicTypeSupport's name instead.
    const TYPE_NAME: &'static str = "ferrodds::python::DynSample";
    const EXTENSIBILITY: Extensibility = Extensibility::Final;
    const IS_KEYED: bool = K;
}

/// Adds the member name to a conversion error, keeping its Python type.
fn in_field(py: Python<'_>, e: PyErr, field: &str) -> PyErr {
    let msg = format!("field '{field}': {}", e.value(py));
    if e.is_instance_of::<PyTypeError>(py) {
        PyTypeError::new_err(msg)
    } else if e.is_instance_of::<PyOverflowError>(py) {
        PyOverflowError::new_err(msg)
    } else {
        PyValueError::new_err(msg)
    }
}

/// Writes one Python value of `kind`.
fn write_value(w: &mut CdrWriter<'_>, kind: &Kind, v: &Bound<'_, PyAny>) -> PyResult<()> {
    match kind {
        Kind::Bool => w.write_bool(v.extract::<bool>()?),
        Kind::I8 => w.write_i8(v.extract::<i8>()?),
        Kind::U8 => w.write_u8(v.extract::<u8>()?),
        Kind::I16 => w.write_i16(v.extract::<i16>()?),
        Kind::U16 => w.write_u16(v.extract::<u16>()?),
        Kind::I32 => w.write_i32(v.extract::<i32>()?),
        Kind::U32 => w.write_u32(v.extract::<u32>()?),
        Kind::I64 => w.write_i64(v.extract::<i64>()?),
        Kind::U64 => w.write_u64(v.extract::<u64>()?),
        Kind::F32 => w.write_f32(v.extract::<f64>()? as f32),
        Kind::F64 => w.write_f64(v.extract::<f64>()?),
        Kind::Str(bound) => {
            let s: PyBackedStr = v.extract()?;
            match bound {
                Some(b) => w.write_bounded_string(&s, *b),
                None => w.write_string(&s),
            }
            .map_err(|e| PyValueError::new_err(e.to_string()))?
        }
        Kind::Bytes(bound) => {
            let b: PyBackedBytes = v.extract()?;
            if let Some(max) = bound {
                if b.len() > *max {
                    return Err(PyValueError::new_err(format!(
                        "{} bytes exceed the bound {max}",
                        b.len()
                    )));
                }
            }
            w.write_bytes(&b)
                .map_err(|e| PyValueError::new_err(e.to_string()))?
        }
        Kind::Seq(elem, bound) => {
            if v.is_instance_of::<PyString>() {
                return Err(PyTypeError::new_err("expected a sequence, got str"));
            }
            let n = v.len()?;
            if let Some(max) = bound {
                if n > *max {
                    return Err(PyValueError::new_err(format!(
                        "{n} elements exceed the bound {max}"
                    )));
                }
            }
            w.write_len(n)
                .map_err(|e| PyValueError::new_err(e.to_string()))?;
            for item in v.try_iter()? {
                write_value(w, elem, &item?)?;
            }
        }
        Kind::Array(elem, n) => {
            if v.is_instance_of::<PyString>() {
                return Err(PyTypeError::new_err("expected a sequence, got str"));
            }
            let len = v.len()?;
            if len != *n {
                return Err(PyValueError::new_err(format!(
                    "array needs exactly {n} elements, got {len}"
                )));
            }
            for item in v.try_iter()? {
                write_value(w, elem, &item?)?;
            }
        }
    }
    Ok(())
}

/// Serializes `obj` (an instance of the topic type) into `out`: the XCDR1 LE body, and for
/// keyed types the key members in XCDR1 LE and BE.
pub(crate) fn encode<const K: bool, const S: bool>(
    desc: &TypeDesc,
    obj: &Bound<'_, PyAny>,
    out: &mut DynSample<K, S>,
) -> PyResult<()> {
    let py = obj.py();
    out.body.clear();
    out.key_le.clear();
    out.key_be.clear();
    out.enc = Some(Encoding::XCDR1_LE);
    let mut body = CdrWriter::new(&mut out.body, Encoding::XCDR1_LE);
    let mut values = Vec::with_capacity(desc.fields.len());
    for f in &desc.fields {
        let name = f.name.bind(py);
        let v = obj
            .getattr(name)
            .map_err(|e| in_field(py, e, &name.to_string()))?;
        write_value(&mut body, &f.kind, &v).map_err(|e| in_field(py, e, &name.to_string()))?;
        if f.key {
            values.push((f, v));
        }
    }
    if K {
        let mut le = CdrWriter::new(&mut out.key_le, Encoding::XCDR1_LE);
        for (f, v) in &values {
            write_value(&mut le, &f.kind, v)?;
        }
        let mut be = CdrWriter::new(
            &mut out.key_be,
            Encoding {
                version: XcdrVersion::Xcdr1,
                endianness: Endianness::Big,
            },
        );
        for (f, v) in &values {
            write_value(&mut be, &f.kind, v)?;
        }
    }
    Ok(())
}

fn read_count(r: &mut CdrReader<'_>, elem_min: usize) -> Result<usize, CdrError> {
    let n = r.read_len()?;
    r.check_count(n, elem_min)?;
    Ok(n)
}

/// Reads one value of `kind` into a Python object.
fn read_value<'py>(
    py: Python<'py>,
    r: &mut CdrReader<'_>,
    kind: &Kind,
) -> PyResult<Bound<'py, PyAny>> {
    let e = |e: CdrError| PyValueError::new_err(e.to_string());
    let xcdr2 = r.version() == XcdrVersion::Xcdr2;
    Ok(match kind {
        Kind::Bool => r.read_bool().map_err(e)?.into_bound_py_any(py)?,
        Kind::I8 => r.read_i8().map_err(e)?.into_bound_py_any(py)?,
        Kind::U8 => r.read_u8().map_err(e)?.into_bound_py_any(py)?,
        Kind::I16 => r.read_i16().map_err(e)?.into_bound_py_any(py)?,
        Kind::U16 => r.read_u16().map_err(e)?.into_bound_py_any(py)?,
        Kind::I32 => r.read_i32().map_err(e)?.into_bound_py_any(py)?,
        Kind::U32 => r.read_u32().map_err(e)?.into_bound_py_any(py)?,
        Kind::I64 => r.read_i64().map_err(e)?.into_bound_py_any(py)?,
        Kind::U64 => r.read_u64().map_err(e)?.into_bound_py_any(py)?,
        Kind::F32 => f64::from(r.read_f32().map_err(e)?).into_bound_py_any(py)?,
        Kind::F64 => r.read_f64().map_err(e)?.into_bound_py_any(py)?,
        Kind::Str(bound) => match bound {
            Some(b) => r.read_bounded_str(*b),
            None => r.read_str(),
        }
        .map_err(e)?
        .into_bound_py_any(py)?,
        Kind::Bytes(bound) => {
            let b = r.read_bytes().map_err(e)?;
            if let Some(max) = bound {
                if b.len() > *max {
                    return Err(e(CdrError::BoundExceeded {
                        len: b.len(),
                        bound: *max,
                    }));
                }
            }
            PyBytes::new(py, b).into_any()
        }
        Kind::Seq(elem, bound) => {
            let scope = if xcdr2 && elem.xcdr2_dheader_as_element() {
                Some(r.begin_dheader().map_err(e)?)
            } else {
                None
            };
            let n = read_count(r, elem.min_size()).map_err(e)?;
            if let Some(max) = bound {
                if n > *max {
                    return Err(e(CdrError::BoundExceeded {
                        len: n,
                        bound: *max,
                    }));
                }
            }
            let list = PyList::empty(py);
            for _ in 0..n {
                list.append(read_value(py, r, elem)?)?;
            }
            if let Some(s) = scope {
                r.end_scope(s);
            }
            list.into_any()
        }
        Kind::Array(elem, n) => {
            let scope = if xcdr2 && elem.xcdr2_dheader_as_element() {
                Some(r.begin_dheader().map_err(e)?)
            } else {
                None
            };
            r.check_count(*n, elem.min_size()).map_err(e)?;
            let list = PyList::empty(py);
            for _ in 0..*n {
                list.append(read_value(py, r, elem)?)?;
            }
            if let Some(s) = scope {
                r.end_scope(s);
            }
            list.into_any()
        }
    })
}

/// Builds an instance of `cls` from a received body.
pub(crate) fn decode<'py>(
    py: Python<'py>,
    desc: &TypeDesc,
    cls: &Bound<'py, PyAny>,
    body: &[u8],
    enc: Encoding,
) -> PyResult<Bound<'py, PyAny>> {
    let mut r = CdrReader::new(body, enc);
    let e = |e: CdrError| PyValueError::new_err(format!("type {:?}: {e}", desc.type_name));
    let scope =
        if enc.version == XcdrVersion::Xcdr2 && desc.extensibility == Extensibility::Appendable {
            Some(r.begin_dheader().map_err(e)?)
        } else {
            None
        };
    let mut args = Vec::with_capacity(desc.fields.len());
    for f in &desc.fields {
        let v = read_value(py, &mut r, &f.kind)
            .map_err(|err| in_field(py, err, &f.name.bind(py).to_string()))?;
        args.push(v);
    }
    if let Some(s) = scope {
        r.end_scope(s);
    }
    cls.call1(PyTuple::new(py, args)?)
}

/// Reads one value of `kind` and, when `w` is given, writes it again in `w`'s encoding
/// (used to turn received key members into the big-endian key form).
fn transcode(
    r: &mut CdrReader<'_>,
    kind: &Kind,
    mut w: Option<&mut CdrWriter<'_>>,
) -> Result<(), CdrError> {
    let xcdr2 = r.version() == XcdrVersion::Xcdr2;
    macro_rules! prim {
        ($read:ident, $write:ident) => {{
            let v = r.$read()?;
            if let Some(w) = w {
                w.$write(v);
            }
        }};
    }
    match kind {
        Kind::Bool => prim!(read_bool, write_bool),
        Kind::I8 => prim!(read_i8, write_i8),
        Kind::U8 => prim!(read_u8, write_u8),
        Kind::I16 => prim!(read_i16, write_i16),
        Kind::U16 => prim!(read_u16, write_u16),
        Kind::I32 => prim!(read_i32, write_i32),
        Kind::U32 => prim!(read_u32, write_u32),
        Kind::I64 => prim!(read_i64, write_i64),
        Kind::U64 => prim!(read_u64, write_u64),
        Kind::F32 => prim!(read_f32, write_f32),
        Kind::F64 => prim!(read_f64, write_f64),
        Kind::Str(bound) => {
            let s = match bound {
                Some(b) => r.read_bounded_str(*b)?,
                None => r.read_str()?,
            };
            if let Some(w) = w {
                w.write_string(s)?;
            }
        }
        Kind::Bytes(_) => {
            let b = r.read_bytes()?;
            if let Some(w) = w {
                w.write_bytes(b)?;
            }
        }
        Kind::Seq(elem, _) | Kind::Array(elem, _) => {
            let scope = if xcdr2 && elem.xcdr2_dheader_as_element() {
                Some(r.begin_dheader()?)
            } else {
                None
            };
            let n = match kind {
                Kind::Array(_, n) => {
                    r.check_count(*n, elem.min_size())?;
                    *n
                }
                _ => {
                    let n = read_count(r, elem.min_size())?;
                    if let Some(w) = w.as_deref_mut() {
                        w.write_len(n)?;
                    }
                    n
                }
            };
            for _ in 0..n {
                transcode(r, elem, w.as_deref_mut())?;
            }
            if let Some(s) = scope {
                r.end_scope(s);
            }
        }
    }
    Ok(())
}

/// The key hash of a received payload (whole sample when `alive`, else a key-only payload),
/// or `None` when it does not decode. Used by keyed readers for writers that send no
/// `PID_KEY_HASH` (Cyclone DDS).
pub(crate) fn key_hash_of_payload(
    desc: &TypeDesc,
    alive: bool,
    payload: &[u8],
) -> Option<[u8; 16]> {
    let (header, body) = EncapsulationHeader::parse(payload).ok()?;
    let pad = header.padding();
    let body = body.get(..body.len().checked_sub(pad)?)?;
    let enc = header.representation.encoding();
    let mut r = CdrReader::new(body, enc);
    let mut key = Vec::with_capacity(16);
    let mut w = CdrWriter::new(
        &mut key,
        Encoding {
            version: XcdrVersion::Xcdr1,
            endianness: Endianness::Big,
        },
    );
    if enc.version == XcdrVersion::Xcdr2 && desc.extensibility == Extensibility::Appendable {
        // The key members come first; what follows them is not read.
        let _members = r.begin_dheader().ok()?;
    }
    for f in &desc.fields {
        if f.key {
            transcode(&mut r, &f.kind, Some(&mut w)).ok()?;
        } else if alive {
            transcode(&mut r, &f.kind, None).ok()?;
        }
    }
    let mut scratch = Vec::with_capacity(16);
    let hash = if desc.small_key {
        let s = DynSample::<true, true> {
            key_be: key,
            ..DynSample::default()
        };
        key_hash_with(&s, XcdrVersion::Xcdr1, &mut scratch)
    } else {
        let s = DynSample::<true, false> {
            key_be: key,
            ..DynSample::default()
        };
        key_hash_with(&s, XcdrVersion::Xcdr1, &mut scratch)
    };
    hash.ok().flatten()
}

/// The type description shared by a topic and its writers and readers.
pub(crate) type SharedDesc = Arc<TypeDesc>;
