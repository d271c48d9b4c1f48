#ifndef FAULTLINE_CNCURSES_SHIM_H
#define FAULTLINE_CNCURSES_SHIM_H
#ifndef _XOPEN_SOURCE_EXTENDED
#define _XOPEN_SOURCE_EXTENDED 1
#endif
#ifndef NCURSES_WIDECHAR
#define NCURSES_WIDECHAR 1
#endif
#include <locale.h>
#include <wchar.h>
#include <ncursesw/curses.h>

// Macros Swift cannot import.
static inline int fl_key_code_yes(void) { return KEY_CODE_YES; }
static inline int fl_color_pair(int n) { return (int)COLOR_PAIR(n); }
static inline WINDOW *fl_stdscr(void) { return stdscr; }
static inline int fl_lines(void) { return LINES; }
static inline int fl_cols(void) { return COLS; }
static inline attr_t fl_a_bold(void) { return A_BOLD; }
static inline attr_t fl_a_reverse(void) { return A_REVERSE; }
static inline attr_t fl_a_underline(void) { return A_UNDERLINE; }
static inline attr_t fl_a_dim(void) { return A_DIM; }
static inline attr_t fl_a_normal(void) { return A_NORMAL; }
static inline int fl_color_pairs(void) { return COLOR_PAIRS; }
static inline SCREEN *fl_newterm_stdio(void) { return newterm(NULL, stdout, stdin); }
#endif
