//! The typed convention's part of [`crate::testing`] (ABI section 14):
//! typed batch and add frames built from rows, the registered typed
//! functions run as the exports run them, and typed output frames decoded.

use crate::abi;
use crate::frame::{self, put_opt, put_u32, FrameError, Reader};
use crate::runtime::{self, Op};
use crate::testing::{decode_add_output, GroupAnswer};
use crate::typed::FieldType;

/// A field's value in a [`TypedInput`], or the value a patch sets.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Int(i64),
    Float(f64),
    Bool(bool),
    /// A string's UTF-8 bytes.
    String(Vec<u8>),
    /// One JSON value's text.
    Raw(Vec<u8>),
    /// JSON `null`: status null in a row, the value `null` in a patch.
    Null,
    /// In a row, no value: the path leads nowhere.
    Missing,
    /// In a row, no value: the field holds another type.
    Mismatch,
}

impl Cell {
    /// A string value.
    pub fn string(s: impl AsRef<[u8]>) -> Cell {
        Cell::String(s.as_ref().to_vec())
    }

    /// A raw value.
    pub fn raw(json: impl AsRef<[u8]>) -> Cell {
        Cell::Raw(json.as_ref().to_vec())
    }

    fn status(&self) -> u8 {
        match self {
            Cell::Null => abi::VALUE_NULL,
            Cell::Missing => abi::VALUE_MISSING,
            Cell::Mismatch => abi::VALUE_MISMATCH,
            _ => abi::VALUE_PRESENT,
        }
    }
}

/// One record of a typed batch: its timestamp, its key and the values of
/// the declared fields, in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TypedInput {
    pub timestamp: i64,
    pub key: Option<Vec<u8>>,
    pub fields: Vec<Cell>,
}

impl TypedInput {
    /// A record without key, at timestamp 0, with these field values.
    pub fn new(fields: Vec<Cell>) -> Self {
        TypedInput { fields, ..Default::default() }
    }
}

/// One column's regions.
struct ColumnBytes {
    ty: FieldType,
    status: Option<Vec<u8>>,
    values: Vec<u8>,
    data: Option<Vec<u8>>,
}

/// The column of type ty holding cells; a cell of another type panics.
fn column(ty: FieldType, cells: impl Iterator<Item = Cell>) -> ColumnBytes {
    let var = ty.width() == 0;
    let mut c = ColumnBytes { ty, status: Some(Vec::new()), values: Vec::new(), data: var.then(Vec::new) };
    if var {
        put_u32(&mut c.values, 0);
    }
    for cell in cells {
        c.status.as_mut().unwrap().push(cell.status());
        match (ty, &cell) {
            (FieldType::Int, Cell::Int(v)) => c.values.extend_from_slice(&v.to_le_bytes()),
            (FieldType::Float, Cell::Float(v)) => c.values.extend_from_slice(&v.to_bits().to_le_bytes()),
            (FieldType::Bool, Cell::Bool(v)) => c.values.push(*v as u8),
            (FieldType::String, Cell::String(b)) | (FieldType::Raw, Cell::Raw(b)) => {
                c.data.as_mut().unwrap().extend_from_slice(b)
            }
            (_, Cell::Null | Cell::Missing | Cell::Mismatch) => c.values.resize(c.values.len() + ty.width(), 0),
            _ => panic!("testing: a {:?} value in a column of type {}", cell, ty),
        }
        if let Some(d) = &c.data {
            put_u32(&mut c.values, d.len() as u32);
        }
    }
    c
}

/// Pads b to a multiple of 8, appends a region there and writes its offset
/// at b[at..].
fn region(b: &mut Vec<u8>, at: usize, bytes: &[u8]) {
    b.resize((b.len() + abi::TYPED_ALIGN - 1) / abi::TYPED_ALIGN * abi::TYPED_ALIGN, 0);
    let off = b.len() as u32;
    frame::patch_u32(b, at, off);
    b.extend_from_slice(bytes);
}

/// The typed batch frame (ABI section 14.3) of rows whose fields have the
/// types given.
pub fn typed_batch_frame(types: &[FieldType], rows: &[TypedInput]) -> Vec<u8> {
    let key = |r: &TypedInput| r.key.clone().map_or(Cell::Null, Cell::String);
    let mut cols = vec![
        column(FieldType::Int, rows.iter().map(|r| Cell::Int(r.timestamp))),
        column(FieldType::String, rows.iter().map(key)),
    ];
    cols[0].status = None;
    for (f, ty) in types.iter().enumerate() {
        let cell =
            |r: &TypedInput| r.fields.get(f).cloned().unwrap_or_else(|| panic!("testing: a row without field {}", f));
        cols.push(column(*ty, rows.iter().map(cell)));
    }
    let mut b = Vec::new();
    put_u32(&mut b, rows.len() as u32);
    put_u32(&mut b, types.len() as u32);
    let table = b.len();
    b.resize(table + abi::TYPED_COLUMN_SIZE * cols.len(), 0);
    for (k, c) in cols.iter().enumerate() {
        let at = table + abi::TYPED_COLUMN_SIZE * k;
        frame::patch_u32(&mut b, at, c.ty as u32);
        if let Some(s) = &c.status {
            region(&mut b, at + 4, s);
        }
        region(&mut b, at + 8, &c.values);
        if let Some(d) = &c.data {
            region(&mut b, at + 12, d);
        }
    }
    b
}

/// The typed add frame (ABI section 14.5) of groups of (accumulator, rows).
pub fn typed_add_frame(types: &[FieldType], groups: &[(Vec<u8>, Vec<TypedInput>)]) -> Vec<u8> {
    let mut b = Vec::new();
    put_u32(&mut b, groups.len() as u32);
    for (acc, rows) in groups {
        put_opt(&mut b, Some(acc));
        put_u32(&mut b, rows.len() as u32);
    }
    b.resize((b.len() + abi::TYPED_ALIGN - 1) / abi::TYPED_ALIGN * abi::TYPED_ALIGN, 0);
    let rows: Vec<TypedInput> = groups.iter().flat_map(|(_, rows)| rows.iter().cloned()).collect();
    b.extend_from_slice(&typed_batch_frame(types, &rows));
    b
}

/// One entry of a typed output frame (ABI section 14.4).
#[derive(Clone, Debug, PartialEq)]
pub enum TypedEntry {
    /// Keep input `.0` unchanged.
    Keep(u32),
    /// Reject input `.0` with the message.
    Error(u32, String),
    /// Emit the input patched.
    Patch(PatchEntry),
}

impl TypedEntry {
    /// A patch of input `index` with these operations, and nothing else set.
    pub fn patch(index: u32, ops: Vec<PatchOp>) -> Self {
        TypedEntry::Patch(PatchEntry { index, ops, ..Default::default() })
    }

    /// An error entry.
    pub fn error(index: u32, msg: &str) -> Self {
        TypedEntry::Error(index, msg.to_string())
    }
}

/// A patch entry: `None` fields are the input's.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PatchEntry {
    pub index: u32,
    /// The operations apply to `{}` rather than the input's value.
    pub new: bool,
    pub key: Option<Option<Vec<u8>>>,
    pub timestamp: Option<i64>,
    pub ops: Vec<PatchOp>,
}

/// One operation of a patch.
#[derive(Clone, Debug, PartialEq)]
pub enum PatchOp {
    Set(String, Cell),
    Remove(String),
}

impl PatchOp {
    /// Sets path to v.
    pub fn set(path: &str, v: Cell) -> Self {
        PatchOp::Set(path.to_string(), v)
    }

    /// Removes path.
    pub fn remove(path: &str) -> Self {
        PatchOp::Remove(path.to_string())
    }
}

fn text(b: Option<&[u8]>) -> String {
    String::from_utf8_lossy(b.unwrap_or(&[])).into_owned()
}

fn bad(rd: &Reader<'_>, back: usize, what: &'static str) -> FrameError {
    FrameError { offset: rd.offset() - back, what }
}

fn read_i64(rd: &mut Reader<'_>) -> Result<i64, FrameError> {
    Ok(i64::from_le_bytes(rd.opt_bytes_fixed(8)?.try_into().unwrap()))
}

/// Decodes a typed output frame.
pub fn decode_typed_output(b: &[u8]) -> Result<Vec<TypedEntry>, FrameError> {
    let mut rd = Reader::new(b);
    let n = rd.count("entry count")?;
    let mut out = Vec::new();
    for _ in 0..n {
        let head = rd.opt_bytes_fixed(5)?;
        let index = u32::from_le_bytes([head[1], head[2], head[3], head[4]]);
        out.push(match head[0] {
            abi::ENTRY_KEEP => TypedEntry::Keep(index),
            abi::ENTRY_ERROR => TypedEntry::Error(index, text(rd.opt_bytes("message")?)),
            abi::ENTRY_PATCH => TypedEntry::Patch(read_patch(&mut rd, index)?),
            _ => return Err(bad(&rd, 5, "unknown typed entry kind")),
        });
    }
    rd.end()?;
    Ok(out)
}

fn read_patch(rd: &mut Reader<'_>, index: u32) -> Result<PatchEntry, FrameError> {
    let flags = rd.opt_bytes_fixed(1)?[0];
    if flags & !(abi::PATCH_FLAG_NEW | abi::PATCH_FLAG_KEY | abi::PATCH_FLAG_TIMESTAMP) != 0 {
        return Err(bad(rd, 1, "unknown patch flags"));
    }
    let mut p = PatchEntry { index, new: flags & abi::PATCH_FLAG_NEW != 0, ..Default::default() };
    if flags & abi::PATCH_FLAG_KEY != 0 {
        p.key = Some(rd.opt_bytes("key")?.map(<[u8]>::to_vec));
    }
    if flags & abi::PATCH_FLAG_TIMESTAMP != 0 {
        p.timestamp = Some(read_i64(rd)?);
    }
    for _ in 0..rd.u32("op count")? {
        p.ops.push(read_op(rd)?);
    }
    Ok(p)
}

fn read_op(rd: &mut Reader<'_>) -> Result<PatchOp, FrameError> {
    let op = rd.opt_bytes_fixed(1)?[0];
    let path = text(rd.opt_bytes("patch path")?);
    match op {
        abi::PATCH_OP_SET => Ok(PatchOp::Set(path, read_value(rd)?)),
        abi::PATCH_OP_REMOVE => Ok(PatchOp::Remove(path)),
        _ => Err(bad(rd, 0, "unknown patch op")),
    }
}

fn read_value(rd: &mut Reader<'_>) -> Result<Cell, FrameError> {
    Ok(match rd.opt_bytes_fixed(1)?[0] {
        abi::TYPE_NULL => Cell::Null,
        abi::TYPE_INT => Cell::Int(read_i64(rd)?),
        abi::TYPE_FLOAT => Cell::Float(f64::from_bits(read_i64(rd)? as u64)),
        abi::TYPE_BOOL => match rd.opt_bytes_fixed(1)?[0] {
            b @ (0 | 1) => Cell::Bool(b == 1),
            _ => return Err(bad(rd, 1, "bool value is not 0 or 1")),
        },
        abi::TYPE_STRING => Cell::String(rd.opt_bytes("string value")?.unwrap_or(&[]).to_vec()),
        abi::TYPE_RAW => Cell::Raw(rd.opt_bytes("raw value")?.unwrap_or(&[]).to_vec()),
        _ => return Err(bad(rd, 1, "unknown value type")),
    })
}

/// weir_fields: the declaration frame the last init's registrations
/// answer with; empty for a raw plugin.
pub fn fields() -> Vec<u8> {
    runtime::run_fields(<[u8]>::to_vec)
}

/// Runs a typed batch frame through the registered typed function for op
/// and returns the typed output frame.
pub fn run_typed_frame(op: Op, frame: &[u8]) -> Result<Vec<u8>, FrameError> {
    runtime::run_typed_batch(op, frame, |out| out.map(<[u8]>::to_vec))
}

/// Runs rows, whose fields are those the last init declared, through the
/// registered typed function for op, and returns the output's entries.
pub fn run_typed(op: Op, rows: &[TypedInput]) -> Vec<TypedEntry> {
    let frame = typed_batch_frame(&runtime::declared_types(), rows);
    decode_typed_output(&run_typed_frame(op, &frame).expect("typed batch frame")).expect("typed output frame")
}

/// weir_typed_agg_add over groups of (accumulator, rows).
pub fn typed_agg_add(groups: &[(Vec<u8>, Vec<TypedInput>)]) -> Vec<GroupAnswer> {
    let frame = typed_add_frame(&runtime::declared_types(), groups);
    runtime::run_typed_agg_add(&frame, |out| decode_add_output(out.expect("typed add frame")))
}
