//! serde_json support (feature `serde_json`).

use crate::{Error, Record, ValueBuf};

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::new(e.to_string())
    }
}

impl<'a> Record<'a> {
    /// Deserializes the value as JSON (an absent value is an error).
    pub fn json<T: serde::Deserialize<'a>>(&self) -> Result<T, Error> {
        match self.value {
            Some(v) => Ok(serde_json::from_slice(v)?),
            None => Err(Error::new("record has no value")),
        }
    }
}

impl ValueBuf {
    /// Appends `v` serialized as compact JSON.
    pub fn write_json<T: serde::Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Error> {
        serde_json::to_writer(&mut *self, v)?;
        Ok(())
    }
}
