# Tokenizer: llama.cpp's LLaMA-2, Falcon and GPT-2 vocab vectors, golden prompts, load errors.
hc_add_check_test(test_tokenizer WHITEBOX SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_tokenizer.c
                  LABELS unit TIMEOUT 300)
