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

(lexical_declaration
  (variable_declarator
    name: (identifier) @name.definition.function
    value: [(arrow_function) (function_expression) (generator_function)])) @definition.function

(variable_declaration
  (variable_declarator
    name: (identifier) @name.definition.function
    value: [(arrow_function) (function_expression) (generator_function)])) @definition.function

(expression_statement
  (assignment_expression
    left: [
      (identifier) @name.definition.function
      (member_expression property: (property_identifier) @name.definition.function)
    ]
    right: [(arrow_function) (function_expression)])) @definition.function

(pair
  key: [(property_identifier) (string)] @name.definition.function
  value: [(arrow_function) (function_expression)]) @definition.function

(call_expression
  function: [
    (identifier) @name.reference.call
    (member_expression property: [(property_identifier) (private_property_identifier)] @name.reference.call)
  ]) @reference.call

(new_expression
  constructor: [
    (identifier) @name.reference.call
    (member_expression property: (property_identifier) @name.reference.call)
  ]) @reference.call
