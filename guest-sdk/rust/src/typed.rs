//! The typed-field convention (ABI section 14): the fields a plugin
//! declares, their types and the statuses of their values.

use crate::abi;
use crate::frame::put_u32;
use core::fmt;

/// The type a declared field is read as (ABI section 14.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum FieldType {
    /// An `i64`: a JSON number with an integral value within int64, in any
    /// spelling (`12`, `1e3`, `2.0`).
    Int = abi::TYPE_INT,
    /// An `f64`: any JSON number, the nearest binary64.
    Float = abi::TYPE_FLOAT,
    /// JSON `true` or `false`.
    Bool = abi::TYPE_BOOL,
    /// A JSON string, decoded to UTF-8.
    String = abi::TYPE_STRING,
    /// Any JSON value but `null`, as its exact source text.
    Raw = abi::TYPE_RAW,
}

impl FieldType {
    /// The type with the ABI's number `t`.
    pub fn from_u8(t: u8) -> Option<FieldType> {
        const ALL: [FieldType; 5] =
            [FieldType::Int, FieldType::Float, FieldType::Bool, FieldType::String, FieldType::Raw];
        ALL.iter().copied().find(|ty| *ty as u8 == t)
    }

    /// The type's name, as the ABI spells it: `int`, `float`, ...
    pub fn name(self) -> &'static str {
        match self {
            FieldType::Int => "int",
            FieldType::Float => "float",
            FieldType::Bool => "bool",
            FieldType::String => "string",
            FieldType::Raw => "raw",
        }
    }

    /// The size of a value in its column: 8, 1, or 0 for variable length.
    pub(crate) fn width(self) -> usize {
        match self {
            FieldType::Int | FieldType::Float => 8,
            FieldType::Bool => 1,
            FieldType::String | FieldType::Raw => 0,
        }
    }
}

impl fmt::Display for FieldType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether a field of a record has a value, or why not (ABI section 14.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldStatus {
    /// The field holds a value of its declared type.
    Present = abi::VALUE_PRESENT as isize,
    /// The field holds JSON `null` (for a key: the record has none).
    Null = abi::VALUE_NULL as isize,
    /// The path leads nowhere in the record's value.
    Missing = abi::VALUE_MISSING as isize,
    /// The field holds a value of another type.
    Mismatch = abi::VALUE_MISMATCH as isize,
}

impl FieldStatus {
    /// The statuses by their byte in a typed batch frame.
    pub(crate) const BY_BYTE: [FieldStatus; 4] =
        [FieldStatus::Present, FieldStatus::Null, FieldStatus::Missing, FieldStatus::Mismatch];

    /// The status's name: `present`, `null`, `missing` or `mismatch`.
    pub fn name(self) -> &'static str {
        match self {
            FieldStatus::Present => "present",
            FieldStatus::Null => "null",
            FieldStatus::Missing => "missing",
            FieldStatus::Mismatch => "mismatch",
        }
    }
}

impl fmt::Display for FieldStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One declared field: a path into the record's JSON value (ABI section
/// 14.1: members of nested objects separated by `.`, with `\.` for a `.`
/// and `\\` for a `\` in a member name), the type it is read as, and what
/// the host does with a record whose field does not fit:
///
/// ```
/// use weir::Field;
/// let age = Field::int("user.age").required().strict();
/// let city = Field::string("user.address.city");
/// assert!(age.is_required() && !city.is_strict());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Field {
    path: String,
    ty: FieldType,
    flags: u8,
}

impl Field {
    /// A field at `path` read as `ty`, without flags: records whose field is
    /// missing, null or of another type reach the function, which sees why
    /// in [`Row::status`](crate::Row::status).
    pub fn new(path: impl Into<String>, ty: FieldType) -> Self {
        Field { path: path.into(), ty, flags: 0 }
    }

    /// An int field ([`FieldType::Int`]).
    pub fn int(path: impl Into<String>) -> Self {
        Field::new(path, FieldType::Int)
    }

    /// A float field ([`FieldType::Float`]).
    pub fn float(path: impl Into<String>) -> Self {
        Field::new(path, FieldType::Float)
    }

    /// A bool field ([`FieldType::Bool`]).
    pub fn bool(path: impl Into<String>) -> Self {
        Field::new(path, FieldType::Bool)
    }

    /// A string field ([`FieldType::String`]).
    pub fn string(path: impl Into<String>) -> Self {
        Field::new(path, FieldType::String)
    }

    /// A raw field ([`FieldType::Raw`]).
    pub fn raw(path: impl Into<String>) -> Self {
        Field::new(path, FieldType::Raw)
    }

    /// The host dead-letters records whose field is missing or null
    /// (`field "user.age": missing`): the function never sees them.
    pub fn required(mut self) -> Self {
        self.flags |= abi::FIELD_REQUIRED;
        self
    }

    /// The host dead-letters records whose field holds another type
    /// (`field "user.age": want int, found string`).
    pub fn strict(mut self) -> Self {
        self.flags |= abi::FIELD_STRICT;
        self
    }

    /// The path, as written.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The type.
    pub fn field_type(&self) -> FieldType {
        self.ty
    }

    /// Whether [`required`](Field::required) was set.
    pub fn is_required(&self) -> bool {
        self.flags & abi::FIELD_REQUIRED != 0
    }

    /// Whether [`strict`](Field::strict) was set.
    pub fn is_strict(&self) -> bool {
        self.flags & abi::FIELD_STRICT != 0
    }
}

/// Why `path` is not a valid field path (ABI section 14.1), if it is not.
pub(crate) fn path_problem(path: &str) -> Option<String> {
    let b = path.as_bytes();
    let what = if b.is_empty() {
        "empty".to_string()
    } else if b.len() > abi::MAX_FIELD_PATH {
        format!("{} bytes, over the limit {}", b.len(), abi::MAX_FIELD_PATH)
    } else {
        segment_problem(b)?
    };
    Some(format!("malformed field path {:?}: {}", path, what))
}

/// The first empty segment or bad escape of a non-empty path.
fn segment_problem(b: &[u8]) -> Option<String> {
    let mut start = 0;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            abi::PATH_SEPARATOR if i == start => return Some(format!("empty segment at byte {}", i)),
            abi::PATH_SEPARATOR => start = i + 1,
            abi::PATH_ESCAPE if !matches!(b.get(i + 1), Some(&abi::PATH_SEPARATOR | &abi::PATH_ESCAPE)) => {
                return Some(format!("bad escape at byte {}", i));
            }
            abi::PATH_ESCAPE => i += 1,
            _ => {}
        }
        i += 1;
    }
    (start == b.len()).then(|| "empty segment at the end".to_string())
}

/// The fields declared by the last init, and the declaration frame that
/// weir_fields answers with.
#[derive(Default)]
pub(crate) struct Decl {
    fields: Vec<Field>,
    frame: Vec<u8>,
}

impl Decl {
    /// The number of fields declared.
    pub(crate) fn len(&self) -> usize {
        self.fields.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// The declared types, in order.
    pub(crate) fn types(&self) -> Vec<FieldType> {
        self.fields.iter().map(|f| f.ty).collect()
    }

    /// Declares f as the next field, or says why it cannot be, in the
    /// host's words.
    pub(crate) fn add(&mut self, f: Field) -> Result<usize, String> {
        let i = self.fields.len();
        let problem = if i >= abi::MAX_TYPED_FIELDS as usize {
            Some(format!("more than {} fields", abi::MAX_TYPED_FIELDS))
        } else if let Some(j) = self.fields.iter().position(|g| g.path == f.path) {
            Some(format!("the same path as field {}", j))
        } else {
            path_problem(&f.path)
        };
        if let Some(p) = problem {
            return Err(format!("weir: declared field {} ({:?}): {}", i, f.path, p));
        }
        self.fields.push(f);
        Ok(i)
    }

    /// The declaration frame (ABI section 14.2).
    pub(crate) fn frame(&mut self) -> &[u8] {
        let b = &mut self.frame;
        b.clear();
        put_u32(b, abi::TYPED_VERSION);
        put_u32(b, self.fields.len() as u32);
        for f in &self.fields {
            b.push(f.ty as u8);
            b.push(f.flags);
            put_u32(b, f.path.len() as u32);
            b.extend_from_slice(f.path.as_bytes());
        }
        &self.frame
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        for ok in ["price", "user.address.city", r"a\.b.c", r"a\\.b", "é.ü"] {
            assert_eq!(path_problem(ok), None, "{}", ok);
        }
        let bad = [
            ("", "empty"),
            (".a", "empty segment at byte 0"),
            ("a..b", "empty segment at byte 2"),
            ("a.", "empty segment at the end"),
            (r"a\b", r"bad escape at byte 1"),
            (r"a\", r"bad escape at byte 1"),
        ];
        for (path, want) in bad {
            assert_eq!(path_problem(path), Some(format!("malformed field path {:?}: {}", path, want)));
        }
        let long = "a".repeat(abi::MAX_FIELD_PATH + 1);
        assert!(path_problem(&long).unwrap().ends_with("1025 bytes, over the limit 1024"));
    }

    #[test]
    fn statuses_by_byte() {
        for (b, s) in FieldStatus::BY_BYTE.iter().enumerate() {
            assert_eq!(*s as usize, b);
        }
        for t in 0..=255u8 {
            assert_eq!(FieldType::from_u8(t).map(|ty| ty as u8), (1..=5).contains(&t).then_some(t));
        }
    }
}
