// jvmos-dacapo antlr: a small imperative language. Left-recursive expressions with precedence
// levels, labelled alternatives and nested blocks give the tool real analysis and code generation work.
grammar Mini;

program   : (function | statement)* EOF ;
function  : 'def' ID '(' params? ')' block ;
params    : ID (',' ID)* ;
block     : '{' statement* '}' ;

statement
    : 'let' ID '=' expr ';'                     # Let
    | ID '=' expr ';'                           # Assign
    | ID '[' expr ']' '=' expr ';'              # IndexAssign
    | 'if' '(' expr ')' block ('else' block)?   # If
    | 'while' '(' expr ')' block                # While
    | 'for' ID 'in' expr block                  # For
    | 'return' expr? ';'                        # Return
    | 'print' '(' args? ')' ';'                 # Print
    | expr ';'                                  # ExprStmt
    ;

expr
    : expr '(' args? ')'                        # Call
    | expr '[' expr ']'                         # Index
    | expr '.' ID                               # Field
    | <assoc=right> expr '^' expr               # Power
    | op=('-' | '!') expr                       # Unary
    | expr op=('*' | '/' | '%') expr            # Mul
    | expr op=('+' | '-') expr                  # Add
    | expr op=('<' | '<=' | '>' | '>=') expr    # Compare
    | expr op=('==' | '!=') expr                # Equal
    | expr '&&' expr                            # And
    | expr '||' expr                            # Or
    | expr '?' expr ':' expr                    # Ternary
    | '(' expr ')'                              # Parens
    | '[' args? ']'                             # List
    | ID                                        # Name
    | INT                                       # Int
    | STRING                                    # Str
    | ('true' | 'false' | 'nil')                # Literal
    ;

args : expr (',' expr)* ;

ID      : [a-zA-Z_] [a-zA-Z_0-9]* ;
INT     : [0-9]+ ;
STRING  : '"' (~["\\\r\n] | '\\' .)* '"' ;
COMMENT : '//' ~[\r\n]* -> skip ;
WS      : [ \t\r\n]+ -> skip ;
