; Tags for JavaScript. Capture contract: see python-tags.scm.

[
  (class name: (_) @name.definition.class)
  (class_declaration name: (_) @name.definition.class)
] @definition.class

[
  (function_declaration name: (identifier) @name.definition.function)
  (generator_function_declaration name: (identifier) @name.definition.function)
  (function_expression name: (identifier) @name.definition.function)
  (generator_function name: (identifier) @name.definition.function)
] @definition.function

(method_definition
  name: [(property_identifier) (private_property_identifier)] @name.definition.method) @definition.method

(field_definition
  property: [(property_identifier) (private_property_identifier)] @name.definition.method
  value: [(arrow_function) (function_expression)]) @definition.method

; include: ecma-shared
