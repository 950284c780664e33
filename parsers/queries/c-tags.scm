; Tags for C. Capture contract: see python-tags.scm. Only definitions with a
; body count: prototypes name no code that can change.

(function_definition
  declarator: [
    (function_declarator declarator: (identifier) @name.definition.function)
    (pointer_declarator declarator: (function_declarator declarator: (identifier) @name.definition.function))
    (pointer_declarator declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name.definition.function)))
  ]) @definition.function

[
  (struct_specifier name: (type_identifier) @name.definition.class body: (_))
  (union_specifier name: (type_identifier) @name.definition.class body: (_))
] @definition.class

(enum_specifier name: (type_identifier) @name.definition.enum body: (_)) @definition.enum

(type_definition declarator: (type_identifier) @name.definition.type) @definition.type

(call_expression
  function: [
    (identifier) @name.reference.call
    (field_expression field: (field_identifier) @name.reference.call)
  ]) @reference.call
