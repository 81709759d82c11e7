#pragma once
/// @file
/// TENSORSTREAM_API marks what the shared libraries export. They are built with
/// `-fvisibility=hidden`, so everything else (the HTTP client, the signers, the concrete
/// credential providers, Asio's and the standard library's instantiations) stays inside them and
/// may change between releases without breaking a program linked against them.
///
/// Classes are marked as a whole, which exports their members, vtables and typeinfo (so that
/// exceptions can be caught and interfaces implemented across the library boundary); free
/// functions are marked one by one. Inline functions and templates need no mark.

#define TENSORSTREAM_API __attribute__((visibility("default")))
