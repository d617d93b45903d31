package smollm2

import (
	"fmt"
	"strings"
)

// Message is one turn of a conversation.
type Message struct {
	Role    string `json:"role"` // "system", "user" or "assistant"
	Content string `json:"content"`
}

// chatTemplate is SmolLM2-Instruct's chat template (the GGUF's tokenizer.chat_template, Jinja):
// ChatML turns, with a default system turn when the conversation does not start with one.
const chatTemplate = "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"

// DefaultSystemPrompt is the system turn chatTemplate adds when the first message is not one.
const DefaultSystemPrompt = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"

// ChatTemplate applies the model's chat template to messages, as Hugging Face's
// apply_chat_template(messages, tokenize=False, add_generation_prompt=...) does: each message
// becomes "<|im_start|>ROLE\nCONTENT<|im_end|>\n", preceded by the default system turn when the
// first message is not a system message; with addGenerationPrompt, "<|im_start|>assistant\n"
// follows, for the model to write the answer. Only SmolLM2's template is known: a file with
// another template is an error (this is not a Jinja engine).
func (m *Model) ChatTemplate(messages []Message, addGenerationPrompt bool) (string, error) {
	if m.chatTemplate != chatTemplate {
		return "", fmt.Errorf("smollm2: %s: its chat template is not SmolLM2's (this program applies only that one)", m.Name)
	}
	return ChatML(messages, addGenerationPrompt), nil
}

// ChatML formats messages with SmolLM2's template (see Model.ChatTemplate).
func ChatML(messages []Message, addGenerationPrompt bool) string {
	var b strings.Builder
	for i, msg := range messages {
		if i == 0 && msg.Role != "system" {
			b.WriteString("<|im_start|>system\n" + DefaultSystemPrompt + "<|im_end|>\n")
		}
		b.WriteString("<|im_start|>" + msg.Role + "\n" + msg.Content + "<|im_end|>\n")
	}
	if addGenerationPrompt {
		b.WriteString("<|im_start|>assistant\n")
	}
	return b.String()
}
