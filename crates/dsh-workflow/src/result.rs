//! Turning the script's return value into JSON, refusing anything that is
//! not plain JSON data (with the path to it) and results that are too big.

use rquickjs::{Ctx, Object, Value};
use serde_json::Map;

use crate::schema::child_path;

/// The deepest nesting accepted in a result.
const MAX_DEPTH: usize = 500;

/// Why a return value could not become JSON.
#[derive(Debug)]
pub(crate) enum ResultError {
    /// The message for [`crate::RunError::Failed`].
    NotJson(String),
    /// JavaScript threw while the value was read (a getter or proxy); the
    /// exception is pending in the context.
    Exception(rquickjs::Error),
}

/// The JSON of the value `value` returned by the script; `undefined` is `null`.
pub(crate) fn to_json<'js>(
    ctx: &Ctx<'js>,
    value: Value<'js>,
    max_bytes: usize,
) -> Result<serde_json::Value, ResultError> {
    if value.is_undefined() {
        return Ok(serde_json::Value::Null);
    }
    let plain_proto = Object::new(ctx.clone())
        .map_err(ResultError::Exception)?
        .get_prototype();
    let mut walk = Walk {
        plain_proto,
        ancestors: Vec::new(),
        bytes: 0,
        max_bytes,
    };
    let json = walk.value(&value, "", 0)?;
    let size = serde_json::to_string_pretty(&json).map_or(usize::MAX, |text| text.len());
    if size > max_bytes {
        return Err(too_big(max_bytes));
    }
    Ok(json)
}

/// The message for a result over `max_bytes`.
fn too_big(max_bytes: usize) -> ResultError {
    ResultError::NotJson(format!(
        "WorkflowError: the workflow's return value is larger than the limit of {max_bytes} bytes \
         of JSON for a workflow result. Return a smaller summary (large intermediate data can be \
         logged or left to the child agents)."
    ))
}

/// The state of one walk over a value.
struct Walk<'js> {
    /// `Object.prototype` as it was when the walk started.
    plain_proto: Option<Object<'js>>,
    /// The objects being walked, outermost first, to spot cycles.
    ancestors: Vec<Value<'js>>,
    /// A lower bound of the size of the pretty JSON so far.
    bytes: usize,
    /// The size limit.
    max_bytes: usize,
}

impl<'js> Walk<'js> {
    /// Counts `n` more bytes of output.
    fn grow(&mut self, n: usize) -> Result<(), ResultError> {
        self.bytes = self.bytes.saturating_add(n);
        if self.bytes > self.max_bytes {
            return Err(too_big(self.max_bytes));
        }
        Ok(())
    }

    /// The JSON of `value` at `path`, `depth` containers deep.
    fn value(
        &mut self,
        value: &Value<'js>,
        path: &str,
        depth: usize,
    ) -> Result<serde_json::Value, ResultError> {
        if value.is_null() {
            self.grow(4)?;
            return Ok(serde_json::Value::Null);
        }
        if let Some(flag) = value.as_bool() {
            self.grow(5)?;
            return Ok(serde_json::Value::Bool(flag));
        }
        if let Some(int) = value.as_int() {
            self.grow(1)?;
            return Ok(int.into());
        }
        if let Some(float) = value.as_float() {
            self.grow(1)?;
            return number(float).ok_or_else(|| not_json(path, &non_finite(float)));
        }
        if let Some(text) = value.as_string() {
            let text = text.to_string().map_err(|_| {
                not_json(path, "strings that are not valid Unicode are not JSON data")
            })?;
            self.grow(text.len() + 2)?;
            return Ok(serde_json::Value::String(text));
        }
        if value.is_undefined() {
            return Err(not_json(path, "undefined is not JSON data"));
        }
        if value.is_function() {
            return Err(not_json(path, "functions are not plain JSON data"));
        }
        if value.is_big_int() {
            return Err(not_json(path, "bigints are not JSON data"));
        }
        if value.is_symbol() {
            return Err(not_json(path, "symbols are not JSON data"));
        }
        let Some(object) = value.as_object() else {
            return Err(not_json(
                path,
                &format!("{} values are not JSON data", value.type_name()),
            ));
        };
        if self.ancestors.contains(value) {
            return Err(not_json(path, "circular references are not JSON data"));
        }
        if depth >= MAX_DEPTH {
            return Err(not_json(
                path,
                &format!("values nested more than {MAX_DEPTH} levels deep are not supported"),
            ));
        }
        self.ancestors.push(value.clone());
        let json = if value.is_array() {
            self.array(object, path, depth)
        } else {
            self.check_plain(object, path)?;
            self.object(object, path, depth)
        };
        self.ancestors.pop();
        json
    }

    /// The elements of an array.
    fn array(
        &mut self,
        array: &Object<'js>,
        path: &str,
        depth: usize,
    ) -> Result<serde_json::Value, ResultError> {
        self.grow(2)?;
        let len: f64 = array.get("length").map_err(ResultError::Exception)?;
        let mut items = Vec::new();
        let mut index = 0usize;
        while (index as f64) < len {
            // Each element costs its line break and indentation at least.
            self.grow(2 + 2 * (depth + 1))?;
            let item: Value = array.get(index as u32).map_err(ResultError::Exception)?;
            items.push(self.value(&item, &format!("{path}[{index}]"), depth + 1)?);
            index += 1;
        }
        Ok(serde_json::Value::Array(items))
    }

    /// The own enumerable string-keyed properties of a plain object, in order.
    fn object(
        &mut self,
        object: &Object<'js>,
        path: &str,
        depth: usize,
    ) -> Result<serde_json::Value, ResultError> {
        self.grow(2)?;
        let mut map = Map::new();
        for key in object.keys::<String>() {
            let key = key.map_err(ResultError::Exception)?;
            self.grow(key.len() + 6 + 2 * (depth + 1))?;
            let item: Value = object.get(key.as_str()).map_err(ResultError::Exception)?;
            let child = child_path(path, &key);
            let json = self.value(&item, &child, depth + 1)?;
            map.insert(key, json);
        }
        Ok(serde_json::Value::Object(map))
    }

    /// Refuses an object whose prototype is not `Object.prototype` or null.
    fn check_plain(&self, object: &Object<'js>, path: &str) -> Result<(), ResultError> {
        let Some(proto) = object.get_prototype() else {
            return Ok(());
        };
        if self.plain_proto.as_ref() == Some(&proto) {
            return Ok(());
        }
        let name = proto
            .get::<_, Value>("constructor")
            .ok()
            .and_then(|constructor| constructor.into_object())
            .and_then(|constructor| constructor.get::<_, String>("name").ok())
            .filter(|name| !name.is_empty());
        let what = match name {
            Some(name) => format!("{name} objects are not plain JSON data"),
            None => "objects with a custom prototype are not plain JSON data".to_owned(),
        };
        Err(not_json(path, &what))
    }
}

/// A JSON number for `float`: an integer when it is one, `None` if not finite.
fn number(float: f64) -> Option<serde_json::Value> {
    const SAFE: f64 = 9_007_199_254_740_992.0; // 2^53
    if float.fract() == 0.0 && float.abs() < SAFE {
        // In range and integral, so the conversion is exact.
        return Some(serde_json::Value::from(float as i64));
    }
    serde_json::Number::from_f64(float).map(serde_json::Value::Number)
}

/// What a non-finite number is called.
fn non_finite(float: f64) -> String {
    let name = if float.is_nan() {
        "NaN"
    } else if float > 0.0 {
        "Infinity"
    } else {
        "-Infinity"
    };
    format!("{name} is not JSON data")
}

/// The run failure for a value at `path` that is not JSON.
fn not_json(path: &str, what: &str) -> ResultError {
    ResultError::NotJson(format!(
        "WorkflowError: the workflow's return value is not plain JSON data \u{2014} workflow \
         result{path}: {what}. Return only JSON-serializable objects/arrays/scalars."
    ))
}
