/* Symbol visibility for the xhal shared library. */
#ifndef XHAL_EXPORT_H_
#define XHAL_EXPORT_H_
#if defined(_WIN32)
#if defined(XHAL_BUILDING_LIBRARY)
#define XHAL_API __declspec(dllexport)
#else
#define XHAL_API __declspec(dllimport)
#endif
#else
#define XHAL_API __attribute__((visibility("default")))
#endif
#endif
