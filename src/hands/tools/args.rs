//! Reading a tool's arguments, with errors precise enough for the model to fix its call.

use serde_json::{Map, Value};

/// A tool call's arguments, checked to be a JSON object.
#[derive(Debug)]
pub struct Args<'a> {
    tool: &'a str,
    map: &'a Map<String, Value>,
}

/// A message for the model about what is wrong with its call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ToolError(pub String);

impl ToolError {
    pub fn new(message: impl Into<String>) -> ToolError {
        ToolError(message.into())
    }
}

impl<'a> Args<'a> {
    pub fn new(tool: &'a str, value: &'a Value, usage: &str) -> Result<Args<'a>, ToolError> {
        match value {
            Value::Object(map) => Ok(Args { tool, map }),
            _ => Err(ToolError(format!("{tool}: arguments must be a JSON object: {usage}"))),
        }
    }

    /// A required string argument.
    pub fn string(&self, name: &str) -> Result<&'a str, ToolError> {
        match self.map.get(name) {
            Some(Value::String(s)) => Ok(s),
            Some(other) => Err(ToolError(format!(
                "{}: '{name}' must be a string, got {}",
                self.tool,
                kind_of(other)
            ))),
            None => Err(ToolError(format!("{}: missing required argument '{name}'", self.tool))),
        }
    }

    /// An optional string argument.
    pub fn opt_string(&self, name: &str) -> Result<Option<&'a str>, ToolError> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(_) => self.string(name).map(Some),
        }
    }

    /// An optional whole number within `range`.
    pub fn opt_uint(
        &self,
        name: &str,
        range: std::ops::RangeInclusive<u64>,
    ) -> Result<Option<u64>, ToolError> {
        let n = match self.map.get(name) {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::Number(n)) => n
                .as_u64()
                .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0 && *f >= 0.0).map(|f| f as u64)),
            Some(Value::String(s)) => s.trim().parse().ok(),
            Some(_) => None,
        };
        match n {
            Some(n) if range.contains(&n) => Ok(Some(n)),
            _ => Err(ToolError(format!(
                "{}: '{name}' must be a whole number from {} to {}",
                self.tool,
                range.start(),
                range.end()
            ))),
        }
    }

    /// An optional true/false argument.
    pub fn opt_bool(&self, name: &str) -> Result<bool, ToolError> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(ToolError(format!(
                "{}: '{name}' must be true or false, got {}",
                self.tool,
                kind_of(other)
            ))),
        }
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
