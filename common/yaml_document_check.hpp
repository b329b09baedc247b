// What yaml-cpp accepts silently and a description must not contain, found in one pass over the
// parser's events (before the tree is built): a key given twice (yaml-cpp keeps the first, so
// `cluster: localhost` then `cluster: other` ran on localhost), a key that is not a plain name
// (a list or mapping as a key: yaml-cpp's "bad conversion" without a file), and a second
// document after `---` (silently ignored). Each is an InputError naming file, line and field,
// as is a syntax error (the field the parser stood in: "training.global_batch_size",
// "(top level)").
#pragma once

#include <string>

namespace tandem {

void check_yaml_document(const std::string& text, const std::string& origin);

}  // namespace tandem
