; Tags for Rust. Capture contract: see python-tags.scm; `impl` blocks are
; @scope captures that qualify their items (`Type.method`) without being
; definitions themselves; `impl Trait for Type` qualifies with `Type`.

[
  (struct_item name: (type_identifier) @name.definition.class)
  (enum_item name: (type_identifier) @name.definition.class)
  (union_item name: (type_identifier) @name.definition.class)
] @definition.class

(trait_item name: (type_identifier) @name.definition.interface) @definition.interface

(type_item name: (type_identifier) @name.definition.type) @definition.type

(mod_item name: (identifier) @name.definition.module body: (declaration_list)) @definition.module

(macro_definition name: (identifier) @name.definition.macro) @definition.macro

[
  (function_item name: (identifier) @name.definition.function)
  (function_signature_item name: (identifier) @name.definition.function)
] @definition.function

(impl_item
  type: [
    (type_identifier) @name.scope
    (generic_type type: (type_identifier) @name.scope)
    (scoped_type_identifier name: (type_identifier) @name.scope)
    (generic_type type: (scoped_type_identifier name: (type_identifier) @name.scope))
  ]) @scope

(call_expression
  function: [
    (identifier) @name.reference.call
    (field_expression field: (field_identifier) @name.reference.call)
    (scoped_identifier name: (identifier) @name.reference.call)
    (generic_function function: (identifier) @name.reference.call)
    (generic_function function: (scoped_identifier name: (identifier) @name.reference.call))
    (generic_function function: (field_expression field: (field_identifier) @name.reference.call))
  ]) @reference.call

(macro_invocation macro: (identifier) @name.reference.call) @reference.call
