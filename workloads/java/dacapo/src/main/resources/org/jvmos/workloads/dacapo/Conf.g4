// jvmos-dacapo antlr: a configuration format (sections, typed values, nested tables and arrays).
grammar Conf;

file     : (section | pair | NEWLINE)* EOF ;
section  : '[' dotted ']' NEWLINE ;
pair     : dotted '=' value NEWLINE ;
dotted   : KEY ('.' KEY)* ;

value
    : STRING                                            # Text
    | NUMBER                                            # Number
    | DATE                                              # Date
    | ('true' | 'false')                                # Bool
    | '[' NEWLINE* (value (',' NEWLINE* value)* ','?)? NEWLINE* ']'   # Array
    | '{' (dotted '=' value (',' dotted '=' value)*)? '}'             # Table
    ;

DATE    : DIGIT DIGIT DIGIT DIGIT '-' DIGIT DIGIT '-' DIGIT DIGIT ;
NUMBER  : '-'? DIGIT+ ('.' DIGIT+)? ([eE] [+-]? DIGIT+)? ;
KEY     : [A-Za-z_] [A-Za-z_0-9-]* ;
STRING  : '"' (~["\\\r\n] | '\\' .)* '"' ;
NEWLINE : ('\r'? '\n')+ ;
COMMENT : '#' ~[\r\n]* -> skip ;
WS      : [ \t]+ -> skip ;
fragment DIGIT : [0-9] ;
