; Tags for TypeScript and TSX (both grammars share these node names).
; Capture contract: see python-tags.scm.

[
  (class name: (_) @name.definition.class)
  (class_declaration name: (_) @name.definition.class)
  (abstract_class_declaration name: (_) @name.definition.class)
] @definition.class

(interface_declaration name: (_) @name.definition.interface) @definition.interface

(enum_declaration name: (_) @name.definition.enum) @definition.enum

(type_alias_declaration name: (_) @name.definition.type) @definition.type

(internal_module name: [(identifier) (nested_identifier)] @name.definition.module) @definition.module

[
  (function_declaration name: (identifier) @name.definition.function)
  (generator_function_declaration name: (identifier) @name.definition.function)
  (function_expression name: (identifier) @name.definition.function)
  (generator_function name: (identifier) @name.definition.function)
  (function_signature name: (identifier) @name.definition.function)
] @definition.function

[
  (method_definition name: [(property_identifier) (private_property_identifier)] @name.definition.method)
  (method_signature name: [(property_identifier) (private_property_identifier)] @name.definition.method)
  (abstract_method_signature name: [(property_identifier) (private_property_identifier)] @name.definition.method)
] @definition.method

(public_field_definition
  name: [(property_identifier) (private_property_identifier)] @name.definition.method
  value: [(arrow_function) (function_expression)]) @definition.method

; include: ecma-shared
